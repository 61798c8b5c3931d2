import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';
import { takeToken, type RateLimit, type TokenBucket } from './rate-limit.js';

/** Failed log-ins allowed for one key from one address: 5 at once, then one every 12 s. */
export const FAILED_LOGINS_PER_KEY: RateLimit = { rate: 1 / 12, burst: 5 };
/** Failed log-ins allowed from one address over all keys (many devices may share a NAT address): 60, then one a second. */
export const FAILED_LOGINS_PER_ADDRESS: RateLimit = { rate: 1, burst: 60 };
/** Addresses (and address + key pairs) remembered at most; the least recently failing are forgotten first. */
const REMEMBERED = 10_000;

/**
 * Slows down password guessing (device log-ins on the MQTT ports, user sign-ins over HTTP; the key is the
 * endpoint key or the email). Failed log-ins are counted per address and key and per address; once either runs out, log-ins from there are refused without a password check (which costs one
 * scrypt) until the bucket refills. A successful log-in clears its address + key count.
 */
export class LoginThrottle {
  readonly #perKey = lruCache<string, TokenBucket>(REMEMBERED);
  readonly #perAddress = lruCache<string, TokenBucket>(REMEMBERED);
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Milliseconds until a log-in for `key` from `address` will be checked again; 0 when it is now. */
  retryAfter(address: string, key: string): number {
    const now = this.#now();
    return Math.max(wait(this.#perKey.get(`${address}\0${key}`), FAILED_LOGINS_PER_KEY, now), wait(this.#perAddress.get(address), FAILED_LOGINS_PER_ADDRESS, now));
  }

  failed(address: string, key: string): void {
    const now = this.#now();
    take(this.#perKey, `${address}\0${key}`, FAILED_LOGINS_PER_KEY, now);
    take(this.#perAddress, address, FAILED_LOGINS_PER_ADDRESS, now);
  }

  succeeded(address: string, key: string): void {
    this.#perKey.delete(`${address}\0${key}`);
  }
}

/** How long until `bucket` has a token again, without taking one. */
function wait(bucket: TokenBucket | undefined, limit: RateLimit, now: number): number {
  return bucket ? takeToken({ ...bucket }, limit, now) : 0;
}

function take(buckets: LRUCache<string, TokenBucket>, id: string, limit: RateLimit, now: number): void {
  const bucket = buckets.get(id) ?? { tokens: limit.burst, refilledAt: now };
  takeToken(bucket, limit, now);
  buckets.set(id, bucket);
}
