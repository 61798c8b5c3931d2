import { numberArg, objectArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

const MAX_CONTEXT_KEYS = 50;
const MAX_GROUPS = 20;

/** `trigger.*` answered by the service (`trigger.exit` is answered in the worker). */
export const triggerNamespace: Namespace = {
  name: 'trigger',
  functions: {
    /** trigger.reply(data) answers a bi-directional event (POST /events with awaitReply) → true if someone was waiting. */
    reply: (context, args) => context.domain.replies.reply(context.event.id, args[0] ?? null),
    /** trigger.wait(name, timeoutMs = 10000) blocks until another run of the account signals `name` → its value, or null on timeout. */
    wait: (context, args) => {
      const timeout = Math.min(numberArg(args, 1, 'timeoutMs', 10_000), Math.max(context.wallTimeoutMs - 100, 1));
      return context.signals.wait(context.scope.accountId, stringArg(args, 0, 'name'), timeout);
    },
    /** trigger.signal(name, value?) wakes the runs waiting on `name` (or is kept 60 s for the next wait) → how many woke. */
    signal: (context, args) => context.signals.signal(context.scope.accountId, stringArg(args, 0, 'name'), args[1] ?? null),
    /** trigger.waitReset(name) forgets a signal nobody has waited for yet → true if there was one. */
    waitReset: (context, args) => context.signals.reset(context.scope.accountId, stringArg(args, 0, 'name')),
    /** trigger.ratelimit(key, limit, periodSeconds) → true while at most `limit` calls with `key` fell in the current period. */
    ratelimit: async (context, args) => {
      const key = stringArg(args, 0, 'key');
      const limit = numberArg(args, 1, 'limit');
      const period = numberArg(args, 2, 'periodSeconds');
      if (period < 1) throw new ScriptArgumentError('periodSeconds must be at least 1');
      const window = Math.floor(Date.now() / 1000 / period);
      const count = await context.cache.incr(context.scope.accountId, `\u0001ratelimit\u0001${key}\u0001${period}\u0001${window}`, 1, period);
      return count <= limit;
    },
    /** trigger.addContext(name, value) or trigger.addContext({name: value, …}) adds to the execution record → true. */
    addContext: (context, args) => {
      const entries = typeof args[0] === 'string' ? { [args[0]]: args[1] ?? null } : objectArg(args, 0, 'context');
      for (const [name, value] of Object.entries(entries)) {
        if (!(name in context.record.context) && Object.keys(context.record.context).length >= MAX_CONTEXT_KEYS) {
          throw new ScriptArgumentError(`an execution keeps at most ${MAX_CONTEXT_KEYS} context entries`);
        }
        context.record.context[name] = value;
      }
      return true;
    },
    /**
     * The source of a library trigger of the account, for `trigger.import(name)` (which the worker
     * defines: it evaluates the source in the calling run and returns its `module.exports`).
     */
    librarySource: async (context, args) => {
      const library = await context.domain.triggers.find(context.scope, stringArg(args, 0, 'name'));
      if (!library.library) throw new ScriptArgumentError(`trigger "${library.name}" is not a library`);
      return { name: library.name, script: library.script };
    },
    /** trigger.addGroup(name) puts the execution in a group (shown on it, for correlating runs) → true. */
    addGroup: (context, args) => {
      const group = stringArg(args, 0, 'group');
      if (!context.record.groups.includes(group)) {
        if (context.record.groups.length >= MAX_GROUPS) throw new ScriptArgumentError(`an execution is in at most ${MAX_GROUPS} groups`);
        context.record.groups.push(group);
      }
      return true;
    },
  },
};
