import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';

/** The longest a cache entry lives (SPEC "Limits": trigger cache maxTtl). */
export const CACHE_MAX_TTL_SECONDS = 86_400;

/** Key/value cache for scripts, one key space per account. An interface so a Redis cache can fill it in cluster mode. */
export interface Cache {
  get(accountId: string, key: string): Promise<string | null>;
  /** `ttlSeconds` is clamped to 1..86400; default 86400. */
  set(accountId: string, key: string, value: string, ttlSeconds?: number): Promise<void>;
  /** Adds `by` atomically (a missing or non-numeric entry counts as 0) and returns the new value. */
  incr(accountId: string, key: string, by: number, ttlSeconds?: number): Promise<number>;
  delete(accountId: string, key: string): Promise<boolean>;
}

export function clampTtl(ttlSeconds: number | undefined): number {
  if (ttlSeconds === undefined || !Number.isFinite(ttlSeconds)) return CACHE_MAX_TTL_SECONDS;
  return Math.min(Math.max(Math.ceil(ttlSeconds), 1), CACHE_MAX_TTL_SECONDS);
}

/** The embedded cache: in this process, bounded (LRU), entries expire by TTL. Atomic because this process is the only writer. */
export class MemoryCache implements Cache {
  readonly #entries: LRUCache<string, string>;

  constructor(options: { maxEntries: number } = { maxEntries: 200_000 }) {
    this.#entries = lruCache(options.maxEntries, { ttlAutopurge: false, ttl: CACHE_MAX_TTL_SECONDS * 1000 });
  }

  async get(accountId: string, key: string): Promise<string | null> {
    return this.#entries.get(slot(accountId, key)) ?? null;
  }

  async set(accountId: string, key: string, value: string, ttlSeconds?: number): Promise<void> {
    this.#entries.set(slot(accountId, key), value, { ttl: clampTtl(ttlSeconds) * 1000 });
  }

  async incr(accountId: string, key: string, by: number, ttlSeconds?: number): Promise<number> {
    const id = slot(accountId, key);
    const current = Number(this.#entries.get(id) ?? 0);
    const next = (Number.isFinite(current) ? current : 0) + by;
    // Keeps the entry's remaining lifetime unless a TTL is given.
    const remaining = this.#entries.getRemainingTTL(id);
    const ttl = ttlSeconds !== undefined ? clampTtl(ttlSeconds) * 1000 : remaining > 0 && Number.isFinite(remaining) ? remaining : CACHE_MAX_TTL_SECONDS * 1000;
    this.#entries.set(id, String(next), { ttl });
    return next;
  }

  async delete(accountId: string, key: string): Promise<boolean> {
    return this.#entries.delete(slot(accountId, key));
  }
}

/** Account and key joined so no key of one account can name another's entry. */
function slot(accountId: string, key: string): string {
  return `${accountId}\u0000${key}`;
}
