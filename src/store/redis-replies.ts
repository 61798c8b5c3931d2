import type { Redis } from 'ioredis';
import { LocalReplies, type Replies } from '../events/replies.js';
import { REDIS_PREFIX } from './redis.js';

/** Takes the waiter's key (whoever deletes it gives the one reply) and publishes the reply to every node. */
const REPLY = `
if redis.call('DEL', KEYS[1]) == 1 then
  redis.call('PUBLISH', KEYS[2], ARGV[1])
  return 1
end
return 0
`;

/**
 * Replies across the nodes of a cluster: a wait is registered in Redis (a key that lives as long as the wait), and a
 * reply given on any node is published to all of them; the node that waits delivers it. A reply given on the node
 * that waits is delivered there at once (draft runs and `exec.sync` wait for replies that are not JSON).
 */
export class RedisReplies implements Replies {
  readonly #local = new LocalReplies();
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #channel: string;

  private constructor(redis: Redis, subscriber: Redis, prefix: string) {
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#prefix = `${prefix}reply:`;
    this.#channel = `${prefix}replies`;
  }

  /** Subscribes on a connection of its own (a subscribed connection can do nothing else). */
  static async open(redis: Redis, prefix = REDIS_PREFIX): Promise<RedisReplies> {
    const subscriber = redis.duplicate();
    const replies = new RedisReplies(redis, subscriber, prefix);
    subscriber.on('message', (_channel: string, message: string) => replies.#delivered(message));
    await subscriber.subscribe(replies.#channel);
    return replies;
  }

  expect(eventId: string, timeoutMs: number): Promise<unknown> {
    const waited = this.#local.expect(eventId, timeoutMs);
    // Sent before the caller publishes the event, so it reaches Redis before any node can run a trigger for it.
    this.#redis.set(this.#prefix + eventId, '1', 'PX', Math.max(1, Math.ceil(timeoutMs))).catch(() => undefined);
    return waited;
  }

  async reply(eventId: string, data: unknown): Promise<boolean> {
    if (this.#local.waits(eventId)) {
      this.#redis.del(this.#prefix + eventId).catch(() => undefined);
      return this.#local.reply(eventId, data);
    }
    const sent = await this.#redis.eval(REPLY, 2, this.#prefix + eventId, this.#channel, JSON.stringify({ eventId, data: data ?? null }));
    return sent === 1;
  }

  close(): void {
    this.#subscriber.disconnect();
  }

  #delivered(message: string): void {
    try {
      const { eventId, data } = JSON.parse(message) as { eventId: string; data: unknown };
      this.#local.reply(eventId, data);
    } catch {
      // Not ours: another installation sharing the channel name would need another prefix.
    }
  }
}
