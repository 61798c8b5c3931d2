import { sql, type Kysely } from 'kysely';
import type { JsonObject, EndpointState } from '../domain/endpoints.js';
import type { CensusEndpointPage } from '../domain/field-census.js';
import type { EndpointHealthRow, EndpointOrder, ServiceHealthRow, TriggerHealthRow } from '../domain/health.js';
import type { CountedValue, ExecutionCounts, MetricsStore } from '../domain/metrics.js';
import { parseJsonText } from '../domain/metrics.js';
import { fromJson, type Schema } from './schema.js';
import { firstSeqAtOrAfter } from './seq-bound.js';

/** Log entries that count as an endpoint's errors: the condition of the partial index `logs_endpoint_problems` (0036), word for word. */
const ENDPOINT_PROBLEM = "endpoint_id is not null and (level = 'error' or source = 'device')";

/** How far out of time order an execution may be recorded: a run is recorded when it ends, runs are capped well below this. */
const EXECUTION_ORDER_SLACK_MS = 10 * 60_000;
/** Ids per `in (…)` list: well below either dialect's parameter limit. */
const IDS_PER_QUERY = 500;

const HEALTH_COLUMNS = ['id', 'key', 'service_id', 'state', 'last_seen_at'] as const;

/** The dashboard's counts: grouped COUNTs on indexed columns, never rows loaded into the process. */
export class SqlMetricsStore implements MetricsStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  /** From `endpoints_account_state_service` alone (an index-only scan of the account's entries). */
  async endpointsBy(accountId: string, column: 'state' | 'service_id'): Promise<CountedValue[]> {
    const rows = await this.#db
      .selectFrom('endpoints')
      .select([`${column} as value`, sql<number | string>`count(*)`.as('n')])
      .where('account_id', '=', accountId)
      .groupBy(column)
      .execute();
    return rows.map((row) => ({ value: row.value, count: Number(row.n) }));
  }

  /** Connected endpoints grouped by their service's type: the connected ones only, from the state index. */
  async connectedByServiceType(): Promise<Array<{ protocol: string; count: number }>> {
    const rows = await this.#db
      .selectFrom('endpoints')
      .innerJoin('services', 'services.id', 'endpoints.service_id')
      .select(['services.type as protocol', sql<number | string>`count(*)`.as('n')])
      .where('endpoints.state', '=', 'connected')
      .groupBy('services.type')
      .execute();
    return rows.map((row) => ({ protocol: row.protocol, count: Number(row.n) }));
  }

  /** The account's services and their types (a handful of rows). */
  async serviceTypes(accountId: string): Promise<Map<string, string>> {
    const rows = await this.#db.selectFrom('services').select(['id', 'type']).where('account_id', '=', accountId).execute();
    return new Map(rows.map((row) => [row.id, row.type]));
  }

  /** From `endpoint_tags_lookup` (account_id, name, value) alone. */
  async tags(accountId: string): Promise<CountedValue[]> {
    const rows = await this.#db
      .selectFrom('endpoint_tags')
      .select(['name', 'value', sql<number | string>`count(*)`.as('n')])
      .where('account_id', '=', accountId)
      .groupBy(['name', 'value'])
      .execute();
    return rows.map((row) => ({ value: row.value === '' ? row.name : `${row.name}:${row.value}`, count: Number(row.n) }));
  }

  /** Status details live in a JSON column: this one reads each of the account's endpoint rows once. */
  async statusDetail(accountId: string, name: string): Promise<CountedValue[]> {
    const detail = sql<string | null>`cast(status_details -> cast(${name} as text) as text)`;
    const rows = await this.#db
      .selectFrom('endpoints')
      .select([detail.as('value'), sql<number | string>`count(*)`.as('n')])
      .where('account_id', '=', accountId)
      .where(sql<boolean>`(status_details -> cast(${name} as text)) is not null`)
      // By position: PostgreSQL does not see the selected expression in one with other parameters.
      .groupBy(sql`1`)
      .execute();
    return rows.map((row) => ({ value: parseJsonText(row.value), count: Number(row.n) }));
  }

  /**
   * Runs started in [from, to] (ms): the seq range is bisected from the times first, so only the period's
   * rows are read, through `executions_account` (account_id, seq).
   */
  async executionCounts(accountId: string, from: number, to: number, triggerId?: string): Promise<ExecutionCounts> {
    const low = await firstSeqAtOrAfter(this.#db, { table: 'executions', column: 'started_at' }, from - EXECUTION_ORDER_SLACK_MS);
    let query = this.#db
      .selectFrom('executions')
      .select(['status', sql<number | string>`count(*)`.as('n')])
      .where('account_id', '=', accountId)
      .where('seq', '>=', low)
      .where('started_at', '>=', from)
      .where('started_at', '<=', to);
    if (triggerId !== undefined) query = query.where('trigger_id', '=', triggerId);
    const rows = await query.groupBy('status').execute();
    const runs = rows.reduce((sum, row) => sum + Number(row.n), 0);
    const failed = rows.filter((row) => row.status !== 'success').reduce((sum, row) => sum + Number(row.n), 0);
    return { runs, failed };
  }

  /**
   * The account's triggers (hundreds at most), each with its newest run found through `executions_trigger`
   * (trigger, seq): one index probe per trigger; the window's runs as `executionCounts` reads them.
   */
  async triggerHealth(accountId: string, since: number): Promise<TriggerHealthRow[]> {
    const low = await firstSeqAtOrAfter(this.#db, { table: 'executions', column: 'started_at' }, since - EXECUTION_ORDER_SLACK_MS);
    const [triggers, counts] = await Promise.all([
      this.#db
        .selectFrom('triggers')
        .select(['id', 'name', 'enabled', 'library'])
        .select((eb) => eb.selectFrom('executions').select('started_at').whereRef('executions.trigger_id', '=', 'triggers.id').orderBy('seq', 'desc').limit(1).as('last_run'))
        .where('account_id', '=', accountId)
        .execute(),
      this.#db
        .selectFrom('executions')
        .select(['trigger_id', 'status', sql<number | string>`count(*)`.as('n')])
        .where('account_id', '=', accountId)
        .where('seq', '>=', low)
        .where('started_at', '>=', since)
        .groupBy(['trigger_id', 'status'])
        .execute(),
    ]);
    const runs = new Map<string, { runs: number; failed: number }>();
    for (const row of counts) {
      const entry = runs.get(row.trigger_id) ?? { runs: 0, failed: 0 };
      entry.runs += Number(row.n);
      if (row.status !== 'success') entry.failed += Number(row.n);
      runs.set(row.trigger_id, entry);
    }
    return triggers.map((row) => ({
      id: row.id,
      name: row.name,
      enabled: row.enabled === 1,
      library: row.library === 1,
      lastRunAt: row.last_run === null ? null : Number(row.last_run),
      ...(runs.get(row.id) ?? { runs: 0, failed: 0 }),
    }));
  }

  /**
   * The account's services, each with its endpoints' latest activity (one probe of `endpoints_service_seen`
   * per service) and their count per state (an index-only scan of the account's entries in
   * `endpoints_account_state_service`, as `/metrics/distribution?field=state`).
   */
  async serviceHealth(accountId: string): Promise<ServiceHealthRow[]> {
    const [services, counts] = await Promise.all([
      this.#db
        .selectFrom('services')
        .select(['id', 'name', 'type'])
        .select((eb) => eb.selectFrom('endpoints').select((inner) => inner.fn.max('endpoints.last_seen_at').as('seen')).whereRef('endpoints.service_id', '=', 'services.id').as('last_seen'))
        .where('account_id', '=', accountId)
        .execute(),
      this.#db
        .selectFrom('endpoints')
        .select(['service_id', 'state', sql<number | string>`count(*)`.as('n')])
        .where('account_id', '=', accountId)
        .groupBy(['state', 'service_id'])
        .execute(),
    ]);
    const states = new Map<string, { connected: number; unavailable: number }>();
    for (const row of counts) {
      const entry = states.get(row.service_id) ?? { connected: 0, unavailable: 0 };
      if (row.state === 'connected') entry.connected += Number(row.n);
      else entry.unavailable += Number(row.n);
      states.set(row.service_id, entry);
    }
    return services.map((row) => ({
      id: row.id,
      name: row.name,
      type: row.type,
      lastSeenAt: row.last_seen === null || row.last_seen === undefined ? null : Number(row.last_seen),
      ...(states.get(row.id) ?? { connected: 0, unavailable: 0 }),
    }));
  }

  /**
   * The first `limit` endpoints in `order`, read from an index with the limit in the query: by activity from
   * `endpoints_account_seen` (account, last seen, id), the seen ones then the never-seen ones (each a range of
   * it, so both dialects put the nulls last alike); by key from `endpoints_account_key`.
   */
  async endpointHealth(accountId: string, order: EndpointOrder, limit: number): Promise<EndpointHealthRow[]> {
    const base = this.#db.selectFrom('endpoints').select(HEALTH_COLUMNS).where('account_id', '=', accountId);
    if (order === 'name') return (await base.orderBy('key').orderBy('id').limit(limit).execute()).map(toHealthRow);
    const direction = order === 'lastActivity' ? 'asc' : 'desc';
    const seen = await base.where('last_seen_at', 'is not', null).orderBy('last_seen_at', direction).orderBy('id', direction).limit(limit).execute();
    const never = seen.length < limit ? await base.where('last_seen_at', 'is', null).orderBy('id').limit(limit - seen.length).execute() : [];
    return [...seen, ...never].map(toHealthRow);
  }

  async endpointHealthOf(accountId: string, ids: readonly string[]): Promise<EndpointHealthRow[]> {
    const rows: EndpointHealthRow[] = [];
    for (let start = 0; start < ids.length; start += IDS_PER_QUERY) {
      const chunk = ids.slice(start, start + IDS_PER_QUERY);
      const found = await this.#db.selectFrom('endpoints').select(HEALTH_COLUMNS).where('account_id', '=', accountId).where('id', 'in', chunk).execute();
      rows.push(...found.map(toHealthRow));
    }
    return rows;
  }

  /** From the account's log entries since `since` that are endpoint problems (the partial index `logs_endpoint_problems`). */
  async endpointErrorCounts(accountId: string, since: number, limit: number, endpointIds?: readonly string[]): Promise<Array<{ endpointId: string; count: number }>> {
    if (endpointIds?.length === 0) return [];
    let query = this.#db
      .selectFrom('logs')
      .select(['endpoint_id', (eb) => eb.fn.countAll<number | string>().as('count')])
      .where('account_id', '=', accountId)
      .where('time', '>=', since)
      .where(sql.raw<boolean>(ENDPOINT_PROBLEM));
    if (endpointIds) query = query.where('endpoint_id', 'in', [...endpointIds]);
    const rows = await query.groupBy('endpoint_id').orderBy('count', 'desc').orderBy('endpoint_id').limit(limit).execute();
    return rows.map((row) => ({ endpointId: row.endpoint_id!, count: Number(row.count) }));
  }

  async censusServices(accountId: string): Promise<Array<{ id: string; options: JsonObject }>> {
    const rows = await this.#db.selectFrom('services').select(['id', 'options']).where('account_id', '=', accountId).orderBy('id').execute();
    return rows.map((row) => ({ id: row.id, options: fromJson<JsonObject>(row.options) }));
  }

  async censusTriggerGlobals(accountId: string): Promise<JsonObject[]> {
    const rows = await this.#db.selectFrom('triggers').select('globals').where('account_id', '=', accountId).execute();
    return rows.map((row) => fromJson<JsonObject>(row.globals));
  }

  /**
   * A keyset page of `endpoints_service_key` (service, key): each page costs the same however far the scan is.
   * The account is checked on the rows, not in the query, which would lead the planner to `endpoints_account_key`
   * and through the account's other services' endpoints.
   */
  async censusEndpointPage(accountId: string, serviceId: string, afterKey: string | undefined, limit: number): Promise<CensusEndpointPage> {
    let query = this.#db.selectFrom('endpoints').select(['id', 'account_id', 'key', 'tags', 'status_details', 'parameters']).where('service_id', '=', serviceId);
    if (afterKey !== undefined) query = query.where('key', '>', afterKey);
    const rows = await query.orderBy('key').limit(limit).execute();
    return {
      rows: rows
        .filter((row) => row.account_id === accountId)
        .map((row) => ({
          id: row.id,
          tags: fromJson<string[]>(row.tags),
          statusDetails: fromJson<JsonObject>(row.status_details),
          parameters: fromJson<JsonObject>(row.parameters),
        })),
      next: rows.length === limit ? rows[rows.length - 1]!.key : undefined,
    };
  }

  /** By the primary key of `endpoint_storage` (endpoint, name): a name counts each endpoint once. */
  async storageNameCounts(endpointIds: readonly string[]): Promise<Array<{ name: string; count: number }>> {
    const counts = new Map<string, number>();
    for (let start = 0; start < endpointIds.length; start += IDS_PER_QUERY) {
      const chunk = endpointIds.slice(start, start + IDS_PER_QUERY);
      const rows = await this.#db.selectFrom('endpoint_storage').select(['name', sql<number | string>`count(*)`.as('n')]).where('endpoint_id', 'in', chunk).groupBy('name').execute();
      for (const row of rows) counts.set(row.name, (counts.get(row.name) ?? 0) + Number(row.n));
    }
    return [...counts].map(([name, count]) => ({ name, count }));
  }
}

function toHealthRow(row: { id: string; key: string; service_id: string; state: string; last_seen_at: number | null }): EndpointHealthRow {
  return { id: row.id, key: row.key, serviceId: row.service_id, state: row.state as EndpointState, lastSeenAt: row.last_seen_at === null ? null : Number(row.last_seen_at) };
}
