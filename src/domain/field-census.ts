import { setImmediate as nextTurn } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import { parseTag, type JsonObject } from './endpoints.js';

/** The objects whose user-defined keys the census counts. */
export const CENSUS_OBJECTS = ['endpoint', 'service', 'trigger'] as const;
export type CensusObject = (typeof CENSUS_OBJECTS)[number];

/** One endpoint row as the census reads it: only the columns with user-defined keys. */
export interface CensusEndpointRow {
  readonly id: string;
  readonly tags: readonly string[];
  readonly statusDetails: JsonObject;
  readonly parameters: JsonObject;
}

export interface CensusEndpointPage {
  readonly rows: readonly CensusEndpointRow[];
  /** The key the next page starts after; undefined after the last page. */
  readonly next: string | undefined;
}

export interface CensusStore {
  /** The account's services and their options (a handful of rows). */
  censusServices(accountId: string): Promise<Array<{ id: string; options: JsonObject }>>;
  /** The global variables of each of the account's triggers (hundreds at most). */
  censusTriggerGlobals(accountId: string): Promise<JsonObject[]>;
  /** Up to `limit` endpoints of the account's service with keys after `afterKey`, in key order (a keyset page). */
  censusEndpointPage(accountId: string, serviceId: string, afterKey: string | undefined, limit: number): Promise<CensusEndpointPage>;
  /** How many of these endpoints have a storage entry of each name. */
  storageNameCounts(endpointIds: readonly string[]): Promise<Array<{ name: string; count: number }>>;
}

export interface FieldCount {
  readonly object: CensusObject;
  /** `statusDetails.<key>`, `parameters.<key>`, `storage.<name>`, `tags.<name>`, `options.<key>` or `globals.<name>`. */
  readonly field: string;
  /** How many objects have it. */
  readonly count: number;
}

export interface Census {
  readonly items: FieldCount[];
  readonly computedAt: string;
  /** More distinct fields than a census keeps were found: the rarer ones seen last are missing. */
  readonly truncated: boolean;
}

export interface FieldCensusOptions {
  /** A census older than this is recomputed in the background on the next call (which still answers it). */
  readonly maxAgeMs: number;
  /** Accounts whose census is kept (least recently asked for forgotten first). */
  readonly accounts?: number | undefined;
  /** Endpoint rows read per query; the event loop gets a turn between pages. */
  readonly pageSize?: number | undefined;
  /** Censuses computed at once across accounts; others wait their turn. */
  readonly parallel?: number | undefined;
  /** Distinct fields one census keeps. */
  readonly maxFields?: number | undefined;
}

const DEFAULTS = { accounts: 1000, pageSize: 1000, parallel: 2, maxFields: 10_000 };
/** All censuses kept together hold at most this many fields (memory stays bounded whatever the accounts hold). */
const CACHED_FIELDS_MAX = 1_000_000;

interface Cached extends Census {
  readonly computedMs: number;
}

/**
 * Which user-defined keys an account's objects use, and how often. Counting them reads the JSON of every
 * endpoint row, so it is never done per request: each account's census is computed in the background (a
 * keyset scan, a page at a time), kept in memory and answered from there. A call on a census older than
 * `maxAgeMs` answers it at once and starts a refresh; only an account's first call waits. One refresh per
 * account at a time, `parallel` across accounts.
 */
export class FieldCensus {
  readonly #store: CensusStore;
  readonly #maxAgeMs: number;
  readonly #pageSize: number;
  readonly #maxFields: number;
  readonly #cache: LRUCache<string, Cached>;
  readonly #running = new Map<string, Promise<Cached>>();
  readonly #slots: Slots;

  constructor(store: CensusStore, options: FieldCensusOptions) {
    this.#store = store;
    this.#maxAgeMs = options.maxAgeMs;
    this.#pageSize = options.pageSize ?? DEFAULTS.pageSize;
    this.#maxFields = options.maxFields ?? DEFAULTS.maxFields;
    this.#slots = new Slots(options.parallel ?? DEFAULTS.parallel);
    this.#cache = new LRUCache({ max: options.accounts ?? DEFAULTS.accounts, maxSize: CACHED_FIELDS_MAX, sizeCalculation: (census) => census.items.length + 1 });
  }

  /** The account's census: the cached one (refreshed behind the answer when stale), or the first one once computed. */
  async get(accountId: string): Promise<Census> {
    const cached = this.#cache.get(accountId);
    if (cached === undefined) return strip(await this.#refresh(accountId));
    // A failed refresh keeps the census it would have replaced; the next call tries again.
    if (Date.now() - cached.computedMs >= this.#maxAgeMs) this.#refresh(accountId).catch(() => undefined);
    return strip(cached);
  }

  #refresh(accountId: string): Promise<Cached> {
    let running = this.#running.get(accountId);
    if (running === undefined) {
      running = this.#slots
        .run(() => this.#compute(accountId))
        .then((census) => {
          this.#cache.set(accountId, census);
          return census;
        })
        .finally(() => this.#running.delete(accountId));
      this.#running.set(accountId, running);
    }
    return running;
  }

  async #compute(accountId: string): Promise<Cached> {
    // When the scan began: every change before it is counted.
    const computedMs = Date.now();
    const counts = new FieldCounts(this.#maxFields);
    const [services, triggerGlobals] = await Promise.all([this.#store.censusServices(accountId), this.#store.censusTriggerGlobals(accountId)]);
    for (const service of services) counts.keys('service', 'options.', service.options);
    for (const globals of triggerGlobals) counts.keys('trigger', 'globals.', globals);
    for (const service of services) {
      let afterKey: string | undefined;
      for (;;) {
        const { rows, next } = await this.#store.censusEndpointPage(accountId, service.id, afterKey, this.#pageSize);
        for (const row of rows) {
          counts.keys('endpoint', 'statusDetails.', row.statusDetails);
          counts.keys('endpoint', 'parameters.', row.parameters);
          // A tag name may come with several values: the endpoint counts once.
          for (const name of new Set(row.tags.map((tag) => parseTag(tag).name))) counts.add('endpoint', `tags.${name}`, 1);
        }
        if (rows.length > 0) {
          for (const { name, count } of await this.#store.storageNameCounts(rows.map((row) => row.id))) counts.add('endpoint', `storage.${name}`, count);
        }
        if (next === undefined) break;
        afterKey = next;
        await nextTurn();
      }
    }
    return { items: counts.items(), computedAt: new Date(computedMs).toISOString(), truncated: counts.truncated, computedMs };
  }
}

function strip({ items, computedAt, truncated }: Cached): Census {
  return { items, computedAt, truncated };
}

const OBJECT_ORDER: Record<CensusObject, number> = { endpoint: 0, service: 1, trigger: 2 };

/** Counts per (object, field), at most `max` distinct ones. */
class FieldCounts {
  readonly #counts = new Map<string, { object: CensusObject; field: string; count: number }>();
  readonly #max: number;
  truncated = false;

  constructor(max: number) {
    this.#max = max;
  }

  /** Counts each top-level key of `value` (a JSON object; anything else has none). */
  keys(object: CensusObject, prefix: string, value: unknown): void {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
    for (const key of Object.keys(value)) this.add(object, prefix + key, 1);
  }

  add(object: CensusObject, field: string, count: number): void {
    const id = `${object} ${field}`;
    const known = this.#counts.get(id);
    if (known) known.count += count;
    else if (this.#counts.size < this.#max) this.#counts.set(id, { object, field, count });
    else this.truncated = true;
  }

  /** Endpoints', services', then triggers' fields, each the most used first. */
  items(): FieldCount[] {
    return [...this.#counts.values()].sort((a, b) => OBJECT_ORDER[a.object] - OBJECT_ORDER[b.object] || b.count - a.count || (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  }
}

/** At most `size` tasks at once; the others start in the order they came. */
class Slots {
  readonly #size: number;
  #busy = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(size: number) {
    this.#size = size;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#busy >= this.#size) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#busy++;
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy--;
    }
  }
}
