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

function encodeCursor(seq: number): string {
  return Buffer.from(`h1:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^h1:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('IOTB_REQUEST_VALIDATION', 'The next cursor is not one this API returned');
  return Number(match[1]);
}
