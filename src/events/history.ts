import type { Endpoints } from '../domain/endpoints.js';
import { PAGE_DEFAULT_LIMIT, PAGE_MAX_LIMIT } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { Event } from './event.js';
import type { EventStore, HistoryQuery } from './event-store.js';

/** A history search as clients and scripts give it: the endpoint by id or `k.<key>`. */
export interface HistorySearch extends Omit<HistoryQuery, 'endpointId'> {
  readonly endpoint?: string | undefined;
}

/** The most buckets one `GET /history/counts` answers. */
export const HISTORY_COUNTS_MAX_BUCKETS = 1440;

export interface HistoryCounts {
  readonly from: string;
  readonly to: string;
  /** Seconds per bucket. */
  readonly interval: number;
  /** Every bucket from `from` on, empty ones included: its start and how many events it holds. */
  readonly buckets: { time: string; count: number }[];
  readonly total: number;
}

export interface HistoryPage {
  readonly items: Event[];
  /** Pass as `next` to get the following (older) page; null on the last page. */
  readonly next: string | null;
  readonly limit: number;
}

/** The event history of an account: newest first, paged with an opaque `next` cursor. */
export class History {
  readonly #store: EventStore;
  readonly #endpoints: Endpoints;

  constructor(store: EventStore, endpoints: Endpoints) {
    this.#store = store;
    this.#endpoints = endpoints;
  }

  async search(scope: Scope, search: HistorySearch, next?: string, limit = PAGE_DEFAULT_LIMIT): Promise<HistoryPage> {
    checkPeriod(search.from, search.to);
    const size = Math.min(Math.max(limit, 1), PAGE_MAX_LIMIT);
    const query = await this.#query(scope, search);
    const rows = await this.#store.search(scope.accountId, query, size + 1, next === undefined ? undefined : decodeCursor(next));
    const items = rows.slice(0, size);
    const last = items.at(-1);
    return { items: items.map((row) => row.event), next: rows.length > size && last ? encodeCursor(last.seq) : null, limit: size };
  }

  /** The newest matching event, or null when nothing matches. */
  async one(scope: Scope, search: HistorySearch): Promise<Event | null> {
    const [row] = await this.#store.search(scope.accountId, await this.#query(scope, search), 1);
    return row?.event ?? null;
  }

  /** How many matching events fall in each `interval` seconds from `from` through `to` (ISO times, inclusive). */
  async counts(scope: Scope, search: HistorySearch & { readonly from: string; readonly to: string }, interval: number): Promise<HistoryCounts> {
    checkPeriod(search.from, search.to);
    const from = Date.parse(search.from);
    const to = Date.parse(search.to);
    const intervalMs = interval * 1000;
    const size = Math.floor((to - from) / intervalMs) + 1;
    if (size > HISTORY_COUNTS_MAX_BUCKETS) {
      throw new AppError('IOTB_REQUEST_VALIDATION', `The period holds ${size} intervals of ${interval} s; at most ${HISTORY_COUNTS_MAX_BUCKETS}: choose a longer interval or a shorter period`);
    }
    const query = await this.#query(scope, search);
    const found = await this.#store.counts(scope.accountId, query, from, to, intervalMs);
    const counts = new Map(found.map((row) => [row.bucket, row.count]));
    const buckets = Array.from({ length: size }, (_, n) => ({ time: new Date(from + n * intervalMs).toISOString(), count: counts.get(n) ?? 0 }));
    return { from: new Date(from).toISOString(), to: new Date(to).toISOString(), interval, buckets, total: found.reduce((sum, row) => sum + row.count, 0) };
  }

  async get(scope: Scope, id: string): Promise<Event> {
    const event = await this.#store.get(scope.accountId, id);
    if (!event) throw new AppError('IOTB_EVENT_NOT_FOUND');
    return event;
  }

  async #query(scope: Scope, search: HistorySearch): Promise<HistoryQuery> {
    const { endpoint, ...rest } = search;
    if (endpoint === undefined) return rest;
    return { ...rest, endpointId: (await this.#endpoints.get(scope, endpoint)).id };
  }
}

function checkPeriod(from: string | undefined, to: string | undefined): void {
  if (from !== undefined && to !== undefined && Date.parse(from) > Date.parse(to)) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `"from" (${from}) is after "to" (${to})`);
  }
}

/** The `next` cursor of `GET /history` that pages from just before the event at `seq` (older ones, newest first). */
export function encodeCursor(seq: number): string {
  return Buffer.from(`h1:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^h1:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('IOTB_REQUEST_VALIDATION', 'The next cursor is not one this API returned');
  return Number(match[1]);
}
