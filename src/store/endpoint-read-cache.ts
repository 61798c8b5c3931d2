import type { LRUCache } from 'lru-cache';
import type { Endpoint } from '../domain/endpoints.js';
import { lruCache } from '../lru.js';

/** How many recent changes are remembered one by one; older ones count as one change at `#floor`. */
const CHANGES_REMEMBERED = 4096;

/**
 * Endpoint rows as last read, for the reads every API call and script makes (`GET /endpoints/{id | k.key}`,
 * `endpoint.get`) and every device message (the device's look-up by key): on SQLite the statement was most of
 * an API read's time and a fifth of a CoAP message's (docs/performance.md).
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
  /** A look-up by key (`keyLookup`, `deviceLookup`) → the ids it found, in order. */
  readonly #idsByLookup: LRUCache<string, readonly string[]>;
  /** The generation in which each recently changed endpoint was last forgotten. */
  readonly #changedAt: LRUCache<string, number>;
  #generation = 0;
  /** No change older than CHANGES_REMEMBERED is remembered one by one: each counts as made in this generation. */
  #floor = 0;
  /** The generation in which key look-ups were last forgotten (a key added, changed or removed). */
  #keysChangedAt = 0;

  constructor(entries: number) {
    this.#byId = lruCache(entries);
    this.#idsByLookup = lruCache(entries);
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

  /** The endpoints a look-up by key found last time, or undefined when that is not known (any of them not held). */
  getByLookup(lookup: string): Endpoint[] | undefined {
    const ids = this.#idsByLookup.get(lookup);
    if (!ids) return undefined;
    const found: Endpoint[] = [];
    for (const id of ids) {
      const endpoint = this.#byId.get(id);
      if (!endpoint) return undefined;
      found.push(endpoint);
    }
    return found;
  }

  /** Holds what a read that began in `generation` found, unless a write it may predate has ended since. */
  keep(endpoint: Endpoint, generation: number): void {
    if (this.#changedSince(endpoint.id, generation)) return;
    this.#byId.set(endpoint.id, deepFreeze(endpoint));
  }

  /** Holds what a look-up by key that began in `generation` found (none is an answer too). */
  keepLookup(lookup: string, found: readonly Endpoint[], generation: number): void {
    if (this.#keysChangedAt > generation || found.some((endpoint) => this.#changedSince(endpoint.id, generation))) return;
    for (const endpoint of found) this.#byId.set(endpoint.id, deepFreeze(endpoint));
    this.#idsByLookup.set(lookup, found.map((endpoint) => endpoint.id));
  }

  /** After a write to these endpoints that keeps their keys (status details, a failed presence write). */
  forget(ids: Iterable<string>): void {
    const generation = ++this.#generation;
    for (const id of ids) {
      this.#byId.delete(id);
      this.#changedAt.set(id, generation);
    }
  }

  /**
   * After a write whose effect on the row is known exactly (a device heard: state, last seen): the held row, if
   * any, is replaced by `change` of it, so a device's next message finds it without a read. Reads in flight are
   * not kept, as after `forget`.
   */
  patch(id: string, change: (held: Endpoint) => Endpoint): void {
    const held = this.#byId.get(id);
    this.forget([id]);
    if (held) this.#byId.set(id, deepFreeze(change(held)));
  }

  /** After a write that may add, change or remove keys of these endpoints (insert, update, delete). */
  forgetWithKeys(ids: Iterable<string>): void {
    this.forget(ids);
    this.#keysChangedAt = this.#generation;
    this.#idsByLookup.clear();
  }

  /** After a write to endpoints not named one by one (an account or service deleted, a node's devices released). */
  forgetAll(): void {
    const generation = ++this.#generation;
    this.#floor = generation;
    this.#keysChangedAt = generation;
    this.#byId.clear();
    this.#idsByLookup.clear();
    this.#changedAt.clear();
  }

  #changedSince(id: string, generation: number): boolean {
    return (this.#changedAt.get(id) ?? this.#floor) > generation;
  }
}

/** An account's endpoints with this key (in one service, or any), at most `limit`. */
export function keyLookup(accountId: string, key: string, serviceId: string | undefined, limit: number): string {
  return `k\n${accountId}\n${key}\n${serviceId ?? ''}\n${limit}`;
}

/** Any account's endpoints with this key in services of this type (a device's log-in on a shared port). */
export function deviceLookup(serviceType: string, key: string, limit: number): string {
  return `d\n${serviceType}\n${key}\n${limit}`;
}

/** One object is handed to every reader: none of them may change it for the others. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
