import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ChangeNotices, ChangeTopic } from '../domain/change-notices.js';
import { REDIS_PREFIX } from './redis.js';
import { RedisNodeChannel } from './redis-node-channel.js';

/** Change notices over Redis pub/sub: "<topic>\n<key>" on one channel. */
export class RedisChangeNotices implements ChangeNotices {
  readonly #listeners = new Map<string, ((key: string) => void)[]>();
  #channel: RedisNodeChannel | undefined;

  static async open(redis: Redis, node: string, logger: Logger, prefix = REDIS_PREFIX): Promise<RedisChangeNotices> {
    const notices = new RedisChangeNotices();
    notices.#channel = await RedisNodeChannel.open(redis, `${prefix}changes`, node, logger, (body) => notices.#heard(body));
    return notices;
  }

  publish(topic: ChangeTopic, key: string): void {
    // Lost, the other nodes' caches expire by themselves (tokens after IOTBRIDGE_TOKEN_CACHE_TTL).
    this.#channel?.publish(`${topic}\n${key}`, `change notice (${topic})`);
  }

  listen(topic: ChangeTopic, listener: (key: string) => void): void {
    this.#listeners.set(topic, [...(this.#listeners.get(topic) ?? []), listener]);
  }

  close(): void {
    this.#channel?.close();
  }

  #heard(body: string): void {
    // The key is the rest: an MQTT topic may hold a line break.
    const end = body.indexOf('\n');
    if (end < 0) return;
    const key = body.slice(end + 1);
    for (const listener of this.#listeners.get(body.slice(0, end)) ?? []) listener(key);
  }
}
