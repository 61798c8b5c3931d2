import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';
import { AppError } from '../errors.js';

/** A sustained send rate; a bucket holds BURST_SECONDS of it. */
export interface SendRate {
  readonly messagesPerSecond: number;
  readonly bytesPerSecond: number;
}

export interface SendCapsLimits {
  readonly endpoint: SendRate;
  readonly account: SendRate;
}

/** How many seconds of its rate a quiet endpoint or account may send at once. */
export const BURST_SECONDS = 2;

/** Endpoints and accounts whose buckets are remembered; a forgotten one starts full again (the account cap still holds). */
const MAX_ENDPOINTS = 100_000;
const MAX_ACCOUNTS = 10_000;

interface Buckets {
  messages: number;
  bytes: number;
  refilledAt: number;
}

/**
 * Token buckets (messages and bytes) per endpoint and per account for what scripts send to devices, so one
 * script cannot flood a device, or an address, from the service. A send takes from all four buckets or from
 * none: a refused send costs nothing and sends nothing. Per process: in a cluster each process has its own.
 */
export class SendCaps {
  readonly #limits: SendCapsLimits;
  readonly #now: () => number;
  readonly #endpoints = lruCache<string, Buckets>(MAX_ENDPOINTS);
  readonly #accounts = lruCache<string, Buckets>(MAX_ACCOUNTS);

  constructor(limits: SendCapsLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  /**
   * Counts `messages` sends of `bytes` in all to the endpoint, or throws 429 `IOTB_DEVICE_SEND_RATE_LIMITED`
   * (details: `cap` "endpoint" or "account", `retryAfterSeconds`) and counts nothing.
   */
  take(endpoint: { readonly id: string; readonly accountId: string }, bytes: number, messages = 1): void {
    const now = this.#now();
    const mine = refilled(this.#endpoints, endpoint.id, this.#limits.endpoint, now);
    const theirs = refilled(this.#accounts, endpoint.accountId, this.#limits.account, now);
    for (const [cap, buckets, rate] of [['endpoint', mine, this.#limits.endpoint], ['account', theirs, this.#limits.account]] as const) {
      const wait = secondsUntil(buckets, rate, messages, bytes);
      if (wait > 0) throw limited(cap, rate, wait);
    }
    for (const buckets of [mine, theirs]) {
      buckets.messages -= messages;
      buckets.bytes -= bytes;
    }
  }
}

function refilled(table: LRUCache<string, Buckets>, key: string, rate: SendRate, now: number): Buckets {
  let buckets = table.get(key);
  if (!buckets) {
    buckets = { messages: rate.messagesPerSecond * BURST_SECONDS, bytes: rate.bytesPerSecond * BURST_SECONDS, refilledAt: now };
    table.set(key, buckets);
    return buckets;
  }
  const elapsed = Math.max(0, now - buckets.refilledAt) / 1000;
  buckets.messages = Math.min(rate.messagesPerSecond * BURST_SECONDS, buckets.messages + elapsed * rate.messagesPerSecond);
  buckets.bytes = Math.min(rate.bytesPerSecond * BURST_SECONDS, buckets.bytes + elapsed * rate.bytesPerSecond);
  buckets.refilledAt = now;
  return buckets;
}

/** Seconds until the buckets hold enough; 0 when they do now; Infinity when the send is larger than a whole burst. */
function secondsUntil(buckets: Buckets, rate: SendRate, messages: number, bytes: number): number {
  if (messages > rate.messagesPerSecond * BURST_SECONDS || bytes > rate.bytesPerSecond * BURST_SECONDS) return Infinity;
  return Math.max(0, (messages - buckets.messages) / rate.messagesPerSecond, (bytes - buckets.bytes) / rate.bytesPerSecond);
}

function limited(cap: 'endpoint' | 'account', rate: SendRate, wait: number): AppError {
  const limits = `${rate.messagesPerSecond} messages and ${rate.bytesPerSecond} bytes per second`;
  const when = Number.isFinite(wait) ? `; try again in ${Math.ceil(wait * 10) / 10} s` : ': the payload is larger than a whole burst';
  return new AppError('IOTB_DEVICE_SEND_RATE_LIMITED', `The ${cap}'s send rate cap (${limits}) is reached, nothing was sent${when}`, {
    cap,
    ...(Number.isFinite(wait) ? { retryAfterSeconds: Math.max(1, Math.ceil(wait)) } : {}),
  });
}
