import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { SIGNAL_KEEP_MS, type Signals } from '../triggers/signals.js';
import { REDIS_PREFIX } from './redis.js';

/**
 * A wait begins: the kept signal if there is one (taken), else the waiter joins the name's set of waiters
 * (which lives at least as long as the wait). KEYS: kept value, waiters. ARGV: waiter id, wait ms.
 */
const BEGIN = `
local kept = redis.call('GET', KEYS[1])
if kept then
  redis.call('DEL', KEYS[1])
  return kept
end
redis.call('SADD', KEYS[2], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return false
`;

/**
 * A signal: the waiters registered now are woken (their ids published to every node) and the set emptied; with
 * none, the value is kept for the next wait. KEYS: kept value, waiters, channel. ARGV: value JSON, keep ms, name.
 */
const SIGNAL = `
local waiters = redis.call('SMEMBERS', KEYS[2])
if #waiters == 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 0
end
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', KEYS[3], cjson.encode({ waiters = waiters, value = ARGV[1] }))
return #waiters
`;

/**
 * `trigger.wait` / `trigger.signal` across the nodes of a cluster. Each wait has an id registered in Redis; a signal
 * wakes exactly the waits registered when it ran (wherever they are: the ids are published to every node) or,
 * with none, is kept for the next wait, as the in-process signals do.
 */
export class RedisSignals implements Signals {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #keepMs: number;
  /** Waits of this node by id. */
  readonly #waiting = new Map<string, (valueJson: string) => void>();

  private constructor(redis: Redis, subscriber: Redis, prefix: string, keepMs: number) {
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#prefix = `${prefix}signal:`;
    this.#channel = `${prefix}signals`;
    this.#keepMs = keepMs;
  }

  static async open(redis: Redis, options: { prefix?: string; keepMs?: number } = {}): Promise<RedisSignals> {
    const subscriber = redis.duplicate();
    const signals = new RedisSignals(redis, subscriber, options.prefix ?? REDIS_PREFIX, options.keepMs ?? SIGNAL_KEEP_MS);
    subscriber.on('message', (_channel: string, message: string) => signals.#woken(message));
    await subscriber.subscribe(signals.#channel);
    return signals;
  }

  async signal(accountId: string, name: string, value: unknown): Promise<number> {
    const [kept, waiters] = this.#keys(accountId, name);
    const woke = await this.#redis.eval(SIGNAL, 3, kept, waiters, this.#channel, JSON.stringify(value ?? null), String(this.#keepMs));
    return Number(woke);
  }

  async wait(accountId: string, name: string, timeoutMs: number): Promise<unknown> {
    const [kept, waiters] = this.#keys(accountId, name);
    const id = randomUUID();
    // Listening before the wait is registered: a signal right after it finds this node ready.
    const woken = new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        this.#redis.srem(waiters, id).catch(() => undefined);
        resolve(null);
      }, timeoutMs);
      this.#waiting.set(id, (valueJson) => {
        clearTimeout(timer);
        this.#waiting.delete(id);
        resolve(valueJson);
      });
    });
    let taken: unknown;
    try {
      taken = await this.#redis.eval(BEGIN, 2, kept, waiters, id, String(Math.ceil(timeoutMs) + 10_000));
    } catch (error) {
      this.#waiting.get(id)?.('null');
      throw error;
    }
    if (typeof taken === 'string') {
      // A kept signal: this wait is answered by it (even if its timer ran out meanwhile).
      this.#waiting.get(id)?.(taken);
      return JSON.parse(taken);
    }
    const valueJson = await woken;
    return valueJson === null ? null : JSON.parse(valueJson);
  }

  async reset(accountId: string, name: string): Promise<boolean> {
    const [kept] = this.#keys(accountId, name);
    return (await this.#redis.del(kept)) > 0;
  }

  close(): void {
    this.#subscriber.disconnect();
  }

  #woken(message: string): void {
    try {
      const { waiters, value } = JSON.parse(message) as { waiters: string[]; value: string };
      for (const id of waiters) this.#waiting.get(id)?.(value);
    } catch {
      // Not ours.
    }
  }

  /** The account id's length first: no account id and name can be read as another account's. */
  #keys(accountId: string, name: string): [kept: string, waiters: string] {
    const slot = `${accountId.length}:${accountId}:${name}`;
    return [`${this.#prefix}kept:${slot}`, `${this.#prefix}waiting:${slot}`];
  }
}
