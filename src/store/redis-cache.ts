import type { Redis } from 'ioredis';
import { CACHE_MAX_TTL_SECONDS, clampTtl, type Cache } from '../triggers/cache.js';
import { REDIS_PREFIX } from './redis.js';

/**
 * `incr` in one step on the server: a missing or non-numeric entry counts as 0; the entry keeps its remaining
 * lifetime unless a TTL is given (as MemoryCache). `%.17g` keeps every digit a JavaScript number has.
 */
const INCR = `
local current = tonumber(redis.call('GET', KEYS[1]))
if current == nil or current ~= current or current == math.huge or current == -math.huge then current = 0 end
local value = string.format('%.17g', current + tonumber(ARGV[1]))
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[1], value, 'EX', ttl)
else
  local remaining = redis.call('PTTL', KEYS[1])
  if remaining > 0 then redis.call('SET', KEYS[1], value, 'PX', remaining) else redis.call('SET', KEYS[1], value, 'EX', tonumber(ARGV[3])) end
end
return value
`;

/** The scripts' cache in Redis (`IOTBRIDGE_REDIS_URL`): every node of a cluster sees the same entries. */
export class RedisCache implements Cache {
  readonly #redis: Redis;
  readonly #prefix: string;

  /** `prefix` separates installations (and test runs) sharing one Redis. */
  constructor(redis: Redis, prefix = REDIS_PREFIX) {
    this.#redis = redis;
    this.#prefix = `${prefix}cache:`;
  }

  async get(accountId: string, key: string): Promise<string | null> {
    return this.#redis.get(this.#key(accountId, key));
  }

  async set(accountId: string, key: string, value: string, ttlSeconds?: number): Promise<void> {
    await this.#redis.set(this.#key(accountId, key), value, 'EX', clampTtl(ttlSeconds));
  }

  async incr(accountId: string, key: string, by: number, ttlSeconds?: number): Promise<number> {
    const ttl = ttlSeconds === undefined ? 0 : clampTtl(ttlSeconds);
    const value = (await this.#redis.eval(INCR, 1, this.#key(accountId, key), String(by), String(ttl), String(CACHE_MAX_TTL_SECONDS))) as string;
    return Number(value);
  }

  async delete(accountId: string, key: string): Promise<boolean> {
    return (await this.#redis.del(this.#key(accountId, key))) > 0;
  }

  /** The account id's length first: no account id and key can be read as another account's. */
  #key(accountId: string, key: string): string {
    return `${this.#prefix}${accountId.length}:${accountId}:${key}`;
  }
}
