import { QUEUE_TTL_SECONDS } from '../queues.js';
import { numberArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

/** `queue.*`: named FIFO queues private to the account, kept in the database; items live up to 604800 s. */
export const queueNamespace: Namespace = {
  name: 'queue',
  functions: {
    /** queue.put(name, value, ttlSeconds = 604800) → how many items the queue holds now. */
    put: (context, args) => {
      const ttl = numberArg(args, 2, 'ttlSeconds', QUEUE_TTL_SECONDS);
      if (ttl < 1) throw new ScriptArgumentError('ttlSeconds must be at least 1');
      const expiresAt = Date.now() + Math.min(ttl, QUEUE_TTL_SECONDS) * 1000;
      return context.queues.put(context.scope.accountId, stringArg(args, 0, 'name'), args[1] ?? null, expiresAt);
    },
    /** queue.get(name) → the oldest item, removed from the queue; null when it is empty. */
    get: async (context, args) => (await context.queues.take(context.scope.accountId, stringArg(args, 0, 'name'), Date.now()))?.value ?? null,
    /** queue.flush(name) → every item, oldest first, and the queue is empty. */
    flush: (context, args) => context.queues.takeAll(context.scope.accountId, stringArg(args, 0, 'name'), Date.now()),
  },
};
