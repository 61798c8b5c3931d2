import type { LocationServiceStore } from './model.js';

/** How often the counts held in memory are added to the database. */
const FLUSH_MS = 5000;

/**
 * Lookups counted per account, UTC day and kind (`geolocate`, `geolocate:google`, `forward`, `reverse`,
 * `geofence-eval`): in memory, added to the database every few seconds and at stop, so a lookup costs no write.
 * A `kill -9` loses at most the last few seconds of counts, never a lookup's answer.
 */
export class LocationUsage {
  readonly #store: LocationServiceStore;
  #pending = new Map<string, { accountId: string; day: string; kind: string; count: number }>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(store: LocationServiceStore) {
    this.#store = store;
  }

  count(accountId: string, kind: string): void {
    const day = new Date().toISOString().slice(0, 10);
    const key = `${accountId}\u0000${day}\u0000${kind}`;
    const entry = this.#pending.get(key);
    if (entry) entry.count++;
    else this.#pending.set(key, { accountId, day, kind, count: 1 });
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** The account's counts from `fromDay` on, with those not yet written. */
  async counts(accountId: string, fromDay: string): Promise<Array<{ day: string; kind: string; count: number }>> {
    await this.flush();
    return this.#store.usage(accountId, fromDay);
  }

  /** Writes what is counted so far (one flush at a time, in order). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const rows = [...this.#pending.values()];
    this.#pending = new Map();
    this.#flushing = this.#flushing.then(() => this.#store.addUsage(rows)).catch(() => {
      // A failed write (database gone at stop) loses these counts only.
    });
    return this.#flushing;
  }
}
