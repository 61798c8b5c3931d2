/**
 * A small keyed store with hard bounds, for per-peer transfer state (Block1 reassembly, Block2 bodies):
 * entries per owner (peer), entries in total, bytes in total, and a lifetime renewed on each update.
 * Insertion order is kept equal to expiry order (an update moves the entry to the young end), so expiry
 * and eviction both take from the old end.
 */
export interface StoreLimits {
  readonly maxEntries: number;
  readonly maxEntriesPerOwner: number;
  readonly maxBytes: number;
  /** Milliseconds an entry lives after its last update. */
  readonly lifetime: number;
}

import { FifoMap } from './fifo-map.js';

interface Slot<T> {
  readonly owner: string;
  readonly value: T;
  bytes: number;
  expires: number;
}

export class BoundedStore<T> {
  readonly #slots = new FifoMap<string, Slot<T>>();
  readonly #perOwner = new Map<string, number>();
  readonly #limits: StoreLimits;
  #bytes = 0;

  constructor(limits: StoreLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#slots.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: string, now: number): T | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    if (slot.expires <= now) {
      this.delete(key);
      return undefined;
    }
    return slot.value;
  }

  /**
   * Stores `value` under `key` (replacing what was there). Over the owner's share, the owner's oldest entry
   * goes. Over the total bounds, `whenFull` decides: 'evict' drops the oldest entries of anyone (a cache),
   * 'refuse' stores nothing and returns false (state others are still using is worth more than a newcomer).
   */
  set(owner: string, key: string, value: T, bytes: number, now: number, whenFull: 'evict' | 'refuse'): boolean {
    this.delete(key);
    if (bytes > this.#limits.maxBytes) return false;
    if ((this.#perOwner.get(owner) ?? 0) >= this.#limits.maxEntriesPerOwner) this.#evictOldestOf(owner);
    while (this.#slots.size >= this.#limits.maxEntries || this.#bytes + bytes > this.#limits.maxBytes) {
      if (whenFull === 'refuse') return false;
      const oldest = this.#slots.oldest();
      if (oldest === undefined) break;
      this.delete(oldest.key);
    }
    this.#slots.set(key, { owner, value, bytes, expires: now + this.#limits.lifetime });
    this.#perOwner.set(owner, (this.#perOwner.get(owner) ?? 0) + 1);
    this.#bytes += bytes;
    return true;
  }

  /** Records the entry's new size and renews its lifetime; false (and nothing changed) when the byte bound would be crossed. */
  update(key: string, bytes: number, now: number): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    if (this.#bytes - slot.bytes + bytes > this.#limits.maxBytes) return false;
    this.#bytes += bytes - slot.bytes;
    slot.bytes = bytes;
    slot.expires = now + this.#limits.lifetime;
    this.#slots.set(key, slot);
    return true;
  }

  delete(key: string): void {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    this.#slots.delete(key);
    this.#bytes -= slot.bytes;
    const count = (this.#perOwner.get(slot.owner) ?? 1) - 1;
    if (count <= 0) this.#perOwner.delete(slot.owner);
    else this.#perOwner.set(slot.owner, count);
  }

  sweep(now: number): void {
    const expired: string[] = [];
    for (const [key, slot] of this.#slots.entries()) {
      if (slot.expires > now) break;
      expired.push(key);
    }
    for (const key of expired) this.delete(key);
  }

  clear(): void {
    this.#slots.clear();
    this.#perOwner.clear();
    this.#bytes = 0;
  }

  #evictOldestOf(owner: string): void {
    for (const [key, slot] of this.#slots.entries()) {
      if (slot.owner === owner) {
        this.delete(key);
        return;
      }
    }
  }
}
