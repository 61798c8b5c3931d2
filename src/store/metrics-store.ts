import { sql, type Kysely } from 'kysely';
import type { CountedValue, ExecutionCounts, MetricsStore } from '../domain/metrics.js';
import { parseJsonText } from '../domain/metrics.js';
import type { Schema } from './schema.js';
import { firstSeqAtOrAfter } from './seq-bound.js';

/** How far out of time order an execution may be recorded: a run is recorded when it ends, runs are capped well below this. */
const EXECUTION_ORDER_SLACK_MS = 10 * 60_000;

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
}
