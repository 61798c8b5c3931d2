import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BusNotifier } from '../events/bus-shards.js';
import { REDIS_PREFIX } from './redis.js';
import { RedisNodeChannel } from './redis-node-channel.js';

/** Cluster mode's bus notices over Redis pub/sub: the shards touched, "<shard>,<shard>,…". */
export class RedisBusNotifier implements BusNotifier {
  readonly #listeners: ((shards: number[]) => void)[] = [];
  #channel: RedisNodeChannel | undefined;

  static async open(redis: Redis, node: string, logger: Logger, prefix = REDIS_PREFIX): Promise<RedisBusNotifier> {
    const notifier = new RedisBusNotifier();
    notifier.#channel = await RedisNodeChannel.open(redis, `${prefix}bus`, node, logger, (body) => notifier.#heard(body));
    return notifier;
  }

  notify(shards: readonly number[]): void {
    // A lost notice costs a second: the handlers' poll finds the events.
    if (shards.length > 0) this.#channel?.publish(shards.join(','), 'bus notice');
  }

  listen(listener: (shards: number[]) => void): void {
    this.#listeners.push(listener);
  }

  close(): void {
    this.#channel?.close();
  }

  #heard(body: string): void {
    const shards = body
      .split(',')
      .map(Number)
      .filter((shard) => Number.isInteger(shard));
    for (const listener of this.#listeners) listener(shards);
  }
}
