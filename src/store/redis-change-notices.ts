import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { ChangeNotices, ChangeTopic } from '../domain/change-notices.js';
import { REDIS_PREFIX } from './redis.js';

/** Change notices over Redis pub/sub: "<node>\n<topic>\n<key>" on one channel; a node ignores its own. */
export class RedisChangeNotices implements ChangeNotices {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #node: string;
  readonly #logger: Logger;
  readonly #listeners = new Map<string, ((key: string) => void)[]>();

  private constructor(redis: Redis, subscriber: Redis, node: string, prefix: string, logger: Logger) {
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#channel = `${prefix}changes`;
    this.#node = node;
    this.#logger = logger;
  }

  static async open(redis: Redis, node: string, logger: Logger, prefix = REDIS_PREFIX): Promise<RedisChangeNotices> {
    const notices = new RedisChangeNotices(redis, redis.duplicate(), node, prefix, logger);
    notices.#subscriber.on('message', (_channel: string, message: string) => notices.#heard(message));
    await notices.#subscriber.subscribe(notices.#channel);
    return notices;
  }

  publish(topic: ChangeTopic, key: string): void {
    this.#redis.publish(this.#channel, `${this.#node}\n${topic}\n${key}`).catch((error: unknown) => {
      // The other nodes' caches then expire by themselves (tokens after IOTBRIDGE_TOKEN_CACHE_TTL).
      this.#logger.warn({ err: error, topic }, 'change notice not sent to the other nodes');
    });
  }

  listen(topic: ChangeTopic, listener: (key: string) => void): void {
    this.#listeners.set(topic, [...(this.#listeners.get(topic) ?? []), listener]);
  }

  close(): void {
    this.#subscriber.disconnect();
  }

  #heard(message: string): void {
    // The key is the rest: an MQTT topic may hold a line break.
    const first = message.indexOf('\n');
    const second = message.indexOf('\n', first + 1);
    if (first < 0 || second < 0 || message.slice(0, first) === this.#node) return;
    const topic = message.slice(first + 1, second);
    const key = message.slice(second + 1);
    for (const listener of this.#listeners.get(topic) ?? []) {
      try {
        listener(key);
      } catch (error) {
        this.#logger.error({ err: error, topic }, 'change notice listener failed');
      }
    }
  }
}
