import { LRUCache } from 'lru-cache';

/**
 * A least-recently-used cache of at most `entries` items whose memory grows with what it holds. lru-cache's
 * `max` allocates its arrays for all `max` items up front: the service's caches (up to 200,000 items each)
 * cost ~100 ms and tens of MB at every start, full or not. As `maxSize` with each item of size 1 it evicts
 * the same way and allocates as it fills.
 */
export function lruCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(entries: number, options: Omit<LRUCache.Options<K, V, unknown>, 'max' | 'maxSize' | 'sizeCalculation'> = {}): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: entries, sizeCalculation: () => 1 });
}
