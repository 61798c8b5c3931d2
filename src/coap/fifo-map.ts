/**
 * A Map with cheap removal from its oldest end. V8's Map keeps deleted entries as tombstones until it
 * rehashes, and iteration from the start walks over them, so using a Map as a queue (delete the first key,
 * again and again) turns quadratic: measured, a 20 000-entry message-ID cache evicting its oldest entry per
 * request cost ~13 µs per request. Here the order lives in an array of entries (dead ones skipped and
 * compacted away), the Map only indexes them.
 */
interface Entry<K, V> {
  readonly key: K;
  readonly value: V;
  live: boolean;
}

export class FifoMap<K, V> {
  readonly #index = new Map<K, Entry<K, V>>();
  #queue: Entry<K, V>[] = [];
  #head = 0;

  get size(): number {
    return this.#index.size;
  }

  get(key: K): V | undefined {
    return this.#index.get(key)?.value;
  }

  /** Sets `key` as the youngest entry (moving it there when present). */
  set(key: K, value: V): void {
    const old = this.#index.get(key);
    if (old !== undefined) old.live = false;
    const entry = { key, value, live: true };
    this.#index.set(key, entry);
    this.#queue.push(entry);
    this.#compact();
  }

  delete(key: K): boolean {
    const entry = this.#index.get(key);
    if (entry === undefined) return false;
    entry.live = false;
    this.#index.delete(key);
    this.#compact();
    return true;
  }

  /** The oldest entry, if any. */
  oldest(): { readonly key: K; readonly value: V } | undefined {
    this.#skipDead();
    return this.#queue[this.#head];
  }

  /** Removes entries from the oldest end while `expired` says so; stops at the first one it keeps. */
  dropOldestWhile(expired: (value: V, key: K) => boolean): void {
    for (;;) {
      this.#skipDead();
      const entry = this.#queue[this.#head];
      if (entry === undefined || !expired(entry.value, entry.key)) return;
      entry.live = false;
      this.#index.delete(entry.key);
      this.#head++;
    }
  }

  /** Live entries, oldest first. Do not modify the map while iterating. */
  *entries(): IterableIterator<[K, V]> {
    for (let i = this.#head; i < this.#queue.length; i++) {
      const entry = this.#queue[i]!;
      if (entry.live) yield [entry.key, entry.value];
    }
  }

  *values(): IterableIterator<V> {
    for (let i = this.#head; i < this.#queue.length; i++) {
      const entry = this.#queue[i]!;
      if (entry.live) yield entry.value;
    }
  }

  clear(): void {
    this.#index.clear();
    this.#queue = [];
    this.#head = 0;
  }

  #skipDead(): void {
    while (this.#head < this.#queue.length && !this.#queue[this.#head]!.live) this.#head++;
    if (this.#head === this.#queue.length && this.#head > 0) {
      this.#queue = [];
      this.#head = 0;
    }
  }

  /** Keeps the array at most about twice the live entries (amortised O(1) per operation). */
  #compact(): void {
    const length = this.#queue.length - this.#head;
    if (length > 64 && length > 2 * this.#index.size) {
      this.#queue = this.#queue.slice(this.#head).filter((e) => e.live);
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}
