import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BusNotifier } from '../events/bus-shards.js';
import { REDIS_PREFIX } from './redis.js';

/** Cluster mode's bus notices over Redis pub/sub: "<node> <shard>,<shard>,…" on one channel. */
export class RedisBusNotifier implements BusNotifier {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #node: string;
  readonly #logger: Logger;
  readonly #listeners: ((shards: number[]) => void)[] = [];

  private constructor(redis: Redis, subscriber: Redis, node: string, prefix: string, logger: Logger) {
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#channel = `${prefix}bus`;
    this.#node = node;
    this.#logger = logger;
  }

  static async open(redis: Redis, node: string, logger: Logger, prefix = REDIS_PREFIX): Promise<RedisBusNotifier> {
    const notifier = new RedisBusNotifier(redis, redis.duplicate(), node, prefix, logger);
    notifier.#subscriber.on('message', (_channel: string, message: string) => notifier.#heard(message));
    await notifier.#subscriber.subscribe(notifier.#channel);
    return notifier;
  }

  notify(shards: readonly number[]): void {
    if (shards.length === 0) return;
    this.#redis.publish(this.#channel, `${this.#node} ${shards.join(',')}`).catch((error: unknown) => {
      // The handlers' poll finds the events within a second.
      this.#logger.debug({ err: error }, 'bus notice not sent');
    });
  }

  listen(listener: (shards: number[]) => void): void {
    this.#listeners.push(listener);
  }

  close(): void {
    this.#subscriber.disconnect();
  }

  #heard(message: string): void {
    const space = message.indexOf(' ');
    if (space < 0 || message.slice(0, space) === this.#node) return;
    const shards = message
      .slice(space + 1)
      .split(',')
      .map(Number)
      .filter((shard) => Number.isInteger(shard));
    for (const listener of this.#listeners) listener(shards);
  }
}
