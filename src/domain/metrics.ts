import { AppError } from '../errors.js';
import { FieldCensus, type Census, type CensusObject, type CensusStore } from './field-census.js';
import { Health, type HealthObjects, type HealthStore, type StatusItem, type StatusQuery } from './health.js';
import type { Scope } from './scope.js';

/** One value of a field and how many endpoints have it. */
export interface CountedValue {
  readonly value: unknown;
  readonly count: number;
}

export interface ExecutionCounts {
  readonly runs: number;
  readonly failed: number;
}

export interface MetricsStore extends HealthStore, CensusStore {
  endpointsBy(accountId: string, column: 'state' | 'service_id'): Promise<CountedValue[]>;
  /** Service id → service type of the account's services. */
  serviceTypes(accountId: string): Promise<Map<string, string>>;
  tags(accountId: string): Promise<CountedValue[]>;
  statusDetail(accountId: string, name: string): Promise<CountedValue[]>;
  /** Runs started between the two times (ms, inclusive), and how many of them failed. */
  executionCounts(accountId: string, from: number, to: number, triggerId?: string): Promise<ExecutionCounts>;
  /** Connected endpoints per service type over every account (the operator's metrics). */
  connectedByServiceType(): Promise<Array<{ protocol: string; count: number }>>;
}

/** The fields `GET /metrics/distribution` counts endpoints by; `statusDetails.<name>` besides. */
export const DISTRIBUTION_FIELDS = ['state', 'serviceId', 'protocol', 'tags'] as const;
const STATUS_DETAIL = 'statusDetails.';

/** The most values a distribution returns (the most frequent first). */
export const DISTRIBUTION_MAX_LIMIT = 1000;

/** A JSON value as the database gave it as text; text that is not JSON stays text. */
export function parseJsonText(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export interface MetricsOptions {
  /** How old a field census may be before a call refreshes it (behind its answer). */
  readonly fieldsMaxAgeMs: number;
}

/** Counts for the dashboard, account by account (the acting account only, not its sub-accounts). */
export class Metrics {
  readonly #store: MetricsStore;
  readonly #health: Health;
  readonly #census: FieldCensus;

  constructor(store: MetricsStore, objects: HealthObjects, options: MetricsOptions) {
    this.#store = store;
    this.#health = new Health(store, objects);
    this.#census = new FieldCensus(store, { maxAgeMs: options.fieldsMaxAgeMs });
  }

  /** Health of the account's triggers, endpoints and services (see health.ts), in the query's order. */
  async status(scope: Scope, query: StatusQuery): Promise<{ items: StatusItem[] }> {
    return { items: await this.#health.status(scope.accountId, query) };
  }

  /** Which user-defined keys the account's objects use and how often, from the cached census (see field-census.ts). */
  async fields(scope: Scope, objects?: ReadonlySet<CensusObject>): Promise<Census> {
    const census = await this.#census.get(scope.accountId);
    return objects === undefined ? census : { ...census, items: census.items.filter((item) => objects.has(item.object)) };
  }

  /** How many of the account's endpoints have each value of `field`, the most frequent first. */
  async distribution(scope: Scope, field: string, limit = 100): Promise<{ values: CountedValue[] }> {
    const values = await this.#count(scope.accountId, field);
    const sorted = values.sort((a, b) => b.count - a.count || String(a.value).localeCompare(String(b.value)));
    return { values: sorted.slice(0, Math.min(Math.max(limit, 1), DISTRIBUTION_MAX_LIMIT)) };
  }

  async #count(accountId: string, field: string): Promise<CountedValue[]> {
    switch (field) {
      case 'state':
        return this.#store.endpointsBy(accountId, 'state');
      case 'serviceId':
        return this.#store.endpointsBy(accountId, 'service_id');
      case 'protocol': {
        const [byService, types] = await Promise.all([this.#store.endpointsBy(accountId, 'service_id'), this.#store.serviceTypes(accountId)]);
        const byType = new Map<string, number>();
        for (const { value, count } of byService) {
          const type = types.get(String(value)) ?? 'unknown';
          byType.set(type, (byType.get(type) ?? 0) + count);
        }
        return [...byType].map(([value, count]) => ({ value, count }));
      }
      case 'tags':
        return this.#store.tags(accountId);
      default: {
        const name = field.startsWith(STATUS_DETAIL) ? field.slice(STATUS_DETAIL.length) : undefined;
        if (name === undefined || name === '') {
          throw new AppError('IOTB_REQUEST_VALIDATION', `Unknown field "${field}": one of ${DISTRIBUTION_FIELDS.join(', ')} or statusDetails.<name>`);
        }
        return this.#store.statusDetail(accountId, name);
      }
    }
  }

  /** Connected endpoints per protocol in the whole service: for the operator (Prometheus), never for an account. */
  connectedByProtocol(): Promise<Array<{ protocol: string; count: number }>> {
    return this.#store.connectedByServiceType();
  }

  /** Trigger runs started in [from, to] and how many failed. */
  async executions(scope: Scope, range: { readonly from: number; readonly to: number; readonly triggerId?: string | undefined }): Promise<ExecutionCounts & { from: number; to: number }> {
    if (range.from > range.to) throw new AppError('IOTB_REQUEST_VALIDATION', '"from" is after "to"');
    const counts = await this.#store.executionCounts(scope.accountId, range.from, range.to, range.triggerId);
    return { ...counts, from: range.from, to: range.to };
  }
}
