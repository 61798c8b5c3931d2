import type { LRUCache } from 'lru-cache';
import type { Endpoint } from '../domain/endpoints.js';
import { lruCache } from '../lru.js';

/** How many recent changes are remembered one by one; older ones count as one change at `#floor`. */
const CHANGES_REMEMBERED = 4096;

/**
 * Endpoint rows as last read, for the reads every API call and script makes (`GET /endpoints/{id | k.key}`,
 * `endpoint.get`): on SQLite the statement alone cost ~24 µs of a request's ~170 µs (docs/performance.md).
 *
 * Exact, not timed: the endpoint store forgets an endpoint after each of its writes to it has ended (committed or
 * failed), and everything after writes it cannot pin to endpoints (an account or a service deleted with its
 * endpoints). So it is only right where every write to the endpoints goes through this process's store: the
 * embedded database, or PostgreSQL with one node. A cluster's nodes write each other's devices, and do not use it.
 *
 * A read that was in flight while a write ended may hold the row from before it: it is kept only when nothing
 * touching that endpoint (or, for key look-ups, any key) was forgotten since the read began. Generations count
 * the forgetting; a read remembers the one it began in.
 */
export class EndpointReadCache {
  readonly #byId: LRUCache<string, Endpoint>;
  /** `<accountId>\n<key>\n<serviceId>\n<limit>` → the ids a key look-up found, in order. */
  readonly #idsByKey: LRUCache<string, readonly string[]>;
  /** The generation in which each recently changed endpoint was last forgotten. */
  readonly #changedAt: LRUCache<string, number>;
  #generation = 0;
  /** No change older than CHANGES_REMEMBERED is remembered one by one: each counts as made in this generation. */
  #floor = 0;
  /** The generation in which key look-ups were last forgotten (a key added, changed or removed). */
  #keysChangedAt = 0;

  constructor(entries: number) {
    this.#byId = lruCache(entries);
    this.#idsByKey = lruCache(entries);
    this.#changedAt = lruCache(CHANGES_REMEMBERED, {
      dispose: (generation, _id, reason) => {
        if (reason === 'evict') this.#floor = Math.max(this.#floor, generation);
      },
    });
  }

  /** The generation a read begins in: hand it back to `keep` with what the read found. */
  get generation(): number {
    return this.#generation;
  }

  get(accountId: string, id: string): Endpoint | undefined {
    const endpoint = this.#byId.get(id);
    return endpoint?.accountId === accountId ? endpoint : undefined;
  }

  /** The endpoints a key look-up found last time, or undefined when that is not known (any of them not held). */
  getByKey(accountId: string, key: string, serviceId: string | undefined, limit: number): Endpoint[] | undefined {
    const ids = this.#idsByKey.get(keyOf(accountId, key, serviceId, limit));
    if (!ids) return undefined;
    const found: Endpoint[] = [];
    for (const id of ids) {
      const endpoint = this.get(accountId, id);
      if (!endpoint) return undefined;
      found.push(endpoint);
    }
    return found;
  }

  /** Holds what a read that began in `generation` found, unless a write it may predate has ended since. */
  keep(endpoint: Endpoint, generation: number): void {
    if ((this.#changedAt.get(endpoint.id) ?? this.#floor) > generation) return;
    this.#byId.set(endpoint.id, deepFreeze(endpoint));
  }

  keepKey(accountId: string, key: string, serviceId: string | undefined, limit: number, found: readonly Endpoint[], generation: number): void {
    if (this.#keysChangedAt > generation) return;
    for (const endpoint of found) {
      if ((this.#changedAt.get(endpoint.id) ?? this.#floor) > generation) return;
    }
    for (const endpoint of found) this.keep(endpoint, generation);
    this.#idsByKey.set(keyOf(accountId, key, serviceId, limit), found.map((endpoint) => endpoint.id));
  }

  /** After a write to these endpoints that keeps their keys (presence, status details, heard-from). */
  forget(ids: Iterable<string>): void {
    const generation = ++this.#generation;
    for (const id of ids) {
      this.#byId.delete(id);
      this.#changedAt.set(id, generation);
    }
  }

  /** After a write that may add, change or remove keys of these endpoints (insert, update, delete). */
  forgetWithKeys(ids: Iterable<string>): void {
    this.forget(ids);
    this.#keysChangedAt = this.#generation;
    this.#idsByKey.clear();
  }

  /** After a write to endpoints not named one by one (an account or service deleted, a node's devices released). */
  forgetAll(): void {
    const generation = ++this.#generation;
    this.#floor = generation;
    this.#keysChangedAt = generation;
    this.#byId.clear();
    this.#idsByKey.clear();
    this.#changedAt.clear();
  }
}

function keyOf(accountId: string, key: string, serviceId: string | undefined, limit: number): string {
  return `${accountId}\n${key}\n${serviceId ?? ''}\n${limit}`;
}

/** One object is handed to every reader: none of them may change it for the others. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
