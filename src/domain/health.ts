import type { Trigger } from '../triggers/triggers.js';
import type { Endpoint, EndpointState } from './endpoints.js';
import type { Service } from './services.js';

export const STATUS_OBJECTS = ['trigger', 'endpoint', 'service'] as const;
export type StatusObject = (typeof STATUS_OBJECTS)[number];

/** `-errors` (the default): the most errors first, ties by last activity, newest first. */
export const STATUS_SORTS = ['-errors', 'errors', '-lastActivity', 'lastActivity', 'name'] as const;
export type StatusSort = (typeof STATUS_SORTS)[number];

export const STATUS_DEFAULT_LIMIT = 100;
export const STATUS_MAX_LIMIT = 1000;
/** The default error window: the last 24 hours. */
export const STATUS_DEFAULT_WINDOW_MS = 24 * 3600_000;

/** How many endpoints with errors a status call reads, the most first: enough for any `limit`. */
const ERROR_ENDPOINTS = STATUS_MAX_LIMIT;
/** Objects a resolving call reads at once. */
const RESOLVE_BATCH = 50;

export type TriggerState = 'enabled' | 'disabled' | 'library';
/** `idle`: no endpoints; `ok`: all connected; `degraded`: some unavailable; `down`: none connected. */
export type ServiceState = 'idle' | 'ok' | 'degraded' | 'down';

export interface TriggerHealthRow {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly library: boolean;
  /** When its newest run started (ms); null when it never ran. */
  readonly lastRunAt: number | null;
  /** Runs started in the window, and how many of them failed. */
  readonly runs: number;
  readonly failed: number;
}

export interface ServiceHealthRow {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  /** The latest `lastSeenAt` of its endpoints (ms). */
  readonly lastSeenAt: number | null;
  readonly connected: number;
  readonly unavailable: number;
}

export interface EndpointHealthRow {
  readonly id: string;
  readonly key: string;
  readonly serviceId: string;
  readonly state: EndpointState;
  readonly lastSeenAt: number | null;
}

export type EndpointOrder = 'lastActivity' | '-lastActivity' | 'name';

export interface HealthStore {
  /** Every trigger of the account with its newest run, and its runs and failures started at or after `since` (ms). */
  triggerHealth(accountId: string, since: number): Promise<TriggerHealthRow[]>;
  /** Every service of the account with its endpoints' latest activity and their count per state. */
  serviceHealth(accountId: string): Promise<ServiceHealthRow[]>;
  /** The first `limit` endpoints of the account in this order (never-seen endpoints last in both activity orders), from an index. */
  endpointHealth(accountId: string, order: EndpointOrder, limit: number): Promise<EndpointHealthRow[]>;
  /** These endpoints of the account (others' ids are ignored). */
  endpointHealthOf(accountId: string, ids: readonly string[]): Promise<EndpointHealthRow[]>;
  /**
   * Errors recorded for the account's endpoints at or after `since` (ms): the `limit` endpoints with the most,
   * the most first, each with a count of at least 1; with `endpointIds`, only those endpoints are counted.
   */
  endpointErrorCounts(accountId: string, since: number, limit: number, endpointIds?: readonly string[]): Promise<Array<{ endpointId: string; count: number }>>;
}

/** How a resolving call reads the objects: as their own GET routes do. */
export interface HealthObjects {
  trigger(accountId: string, id: string): Promise<Trigger | undefined>;
  endpoint(accountId: string, id: string): Promise<Endpoint | undefined>;
  service(accountId: string, id: string): Promise<Service | undefined>;
}

export interface StatusQuery {
  readonly objects: ReadonlySet<StatusObject>;
  readonly sort: StatusSort;
  readonly limit: number;
  /** Start of the error window (ms). */
  readonly since: number;
  readonly resolve: boolean;
}

export interface StatusItem {
  readonly object: StatusObject;
  readonly id: string;
  /** The trigger's or service's name, the endpoint's key. */
  readonly name: string;
  readonly state: EndpointState | TriggerState | ServiceState;
  readonly lastActivity: string | null;
  readonly errors: number;
  /** Triggers: runs started in the window. */
  readonly runs?: number;
  /** Endpoints: their service. */
  readonly serviceId?: string;
  /** Services: their type. */
  readonly type?: string;
  readonly endpoints?: { readonly connected: number; readonly unavailable: number };
  readonly trigger?: Trigger;
  readonly endpoint?: Endpoint;
  readonly service?: Service;
}

/** An item before its times become text and its object is read. */
type Candidate = Omit<StatusItem, 'lastActivity'> & { readonly lastActivity: number | null };

/**
 * Health per trigger, endpoint and service of an account. Triggers and services are few and read whole;
 * endpoints (up to 100,000 and more) never are: each sort reads its first `limit` endpoints from an index,
 * plus those with errors in the window (at most 1,000), and merges them with the triggers and services.
 */
export class Health {
  readonly #store: HealthStore;
  readonly #objects: HealthObjects;

  constructor(store: HealthStore, objects: HealthObjects) {
    this.#store = store;
    this.#objects = objects;
  }

  async status(accountId: string, query: StatusQuery): Promise<StatusItem[]> {
    const wants = (object: StatusObject) => query.objects.has(object);
    const [triggers, services, errorRows] = await Promise.all([
      wants('trigger') ? this.#store.triggerHealth(accountId, query.since) : [],
      wants('service') ? this.#store.serviceHealth(accountId) : [],
      wants('endpoint') || wants('service') ? this.#store.endpointErrorCounts(accountId, query.since, ERROR_ENDPOINTS) : [],
    ]);
    const errors = new Map(errorRows.map((row) => [row.endpointId, row.count]));
    // Fewer than asked for: every endpoint with errors is among them, the others have none.
    const complete = errorRows.length < ERROR_ENDPOINTS;
    const erring = errorRows.length > 0 ? await this.#store.endpointHealthOf(accountId, [...errors.keys()]) : [];

    const candidates: Candidate[] = [...triggers.map(triggerItem), ...services.map((row) => serviceItem(row, erring, errors))];
    if (wants('endpoint')) {
      const rows = await this.#endpointCandidates(accountId, query, erring);
      const unknown = complete ? [] : rows.filter((row) => !errors.has(row.id)).map((row) => row.id);
      if (unknown.length > 0) {
        for (const row of await this.#store.endpointErrorCounts(accountId, query.since, unknown.length, unknown)) errors.set(row.endpointId, row.count);
      }
      candidates.push(...rows.map((row) => endpointItem(row, errors.get(row.id) ?? 0)));
    }
    const chosen = candidates.sort(COMPARE[query.sort]).slice(0, query.limit);
    const items = query.resolve ? await this.#resolve(accountId, chosen) : chosen;
    return items.map((item) => ({ ...item, lastActivity: item.lastActivity === null ? null : new Date(item.lastActivity).toISOString() }));
  }

  /**
   * The endpoints that can make the first `limit` in this sort: the first `limit` of the index order, and for
   * the error sorts those with errors plus as many more of the most recently active as they could displace.
   */
  async #endpointCandidates(accountId: string, query: StatusQuery, erring: readonly EndpointHealthRow[]): Promise<EndpointHealthRow[]> {
    const { sort, limit } = query;
    if (sort !== '-errors' && sort !== 'errors') return this.#store.endpointHealth(accountId, sort, limit);
    // The most errors first: endpoints without errors come after every erring one, by activity.
    if (sort === '-errors' && erring.length >= limit) return [...erring];
    const active = await this.#store.endpointHealth(accountId, '-lastActivity', limit + erring.length);
    const byId = new Map([...erring, ...active].map((row) => [row.id, row]));
    return [...byId.values()];
  }

  /** Embeds each object as its GET answers it; an object deleted meanwhile drops out. */
  async #resolve(accountId: string, items: readonly Candidate[]): Promise<Candidate[]> {
    const resolved: Array<Candidate | undefined> = [];
    for (let start = 0; start < items.length; start += RESOLVE_BATCH) {
      const batch = items.slice(start, start + RESOLVE_BATCH);
      resolved.push(...(await Promise.all(batch.map((item) => this.#withObject(accountId, item)))));
    }
    return resolved.filter((item) => item !== undefined);
  }

  async #withObject(accountId: string, item: Candidate): Promise<Candidate | undefined> {
    switch (item.object) {
      case 'trigger': {
        const trigger = await this.#objects.trigger(accountId, item.id);
        return trigger && { ...item, trigger };
      }
      case 'endpoint': {
        const endpoint = await this.#objects.endpoint(accountId, item.id);
        return endpoint && { ...item, endpoint };
      }
      case 'service': {
        const service = await this.#objects.service(accountId, item.id);
        return service && { ...item, service };
      }
    }
  }
}

function triggerItem(row: TriggerHealthRow): Candidate {
  const state: TriggerState = row.library ? 'library' : row.enabled ? 'enabled' : 'disabled';
  return { object: 'trigger', id: row.id, name: row.name, state, lastActivity: row.lastRunAt, errors: row.failed, runs: row.runs };
}

function serviceItem(row: ServiceHealthRow, erring: readonly EndpointHealthRow[], errors: ReadonlyMap<string, number>): Candidate {
  const { connected, unavailable } = row;
  const state: ServiceState = connected + unavailable === 0 ? 'idle' : unavailable === 0 ? 'ok' : connected === 0 ? 'down' : 'degraded';
  const serviceErrors = erring.filter((endpoint) => endpoint.serviceId === row.id).reduce((sum, endpoint) => sum + (errors.get(endpoint.id) ?? 0), 0);
  return { object: 'service', id: row.id, name: row.name, state, lastActivity: row.lastSeenAt, errors: serviceErrors, type: row.type, endpoints: { connected, unavailable } };
}

function endpointItem(row: EndpointHealthRow, errors: number): Candidate {
  return { object: 'endpoint', id: row.id, name: row.key, state: row.state, lastActivity: row.lastSeenAt, errors, serviceId: row.serviceId };
}

type Compare = (a: Candidate, b: Candidate) => number;

/** Code-point order (not the locale's), so the order is the same on every machine. */
const text = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Newest (or oldest) first, never active last either way; equal times by id, as the index orders the
 * endpoints (so the first `limit` it gives are the first `limit` here).
 */
const activity =
  (direction: 1 | -1): Compare =>
  (a, b) => {
    if (a.lastActivity === b.lastActivity) return (a.lastActivity === null ? 1 : direction) * text(a.id, b.id);
    if (a.lastActivity === null) return 1;
    if (b.lastActivity === null) return -1;
    return direction * (a.lastActivity - b.lastActivity);
  };

const newest = activity(-1);

const COMPARE: Record<StatusSort, Compare> = {
  '-errors': (a, b) => b.errors - a.errors || newest(a, b),
  errors: (a, b) => a.errors - b.errors || newest(a, b),
  '-lastActivity': newest,
  lastActivity: activity(1),
  name: (a, b) => text(a.name, b.name) || text(a.id, b.id),
};
