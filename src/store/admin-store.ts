import { sql, type Kysely } from 'kysely';
import type { AccountControl, AdminStore, EndpointLocation, EventLag, RecentRuns, TableSize } from '../admin/model.js';
import type { Schema } from './schema.js';
import { toIso } from './sql.js';

/** Tables the storage view lists (the ones that grow with use). */
const TABLES = [
  'accounts', 'users', 'tokens', 'services', 'endpoints', 'endpoint_tags', 'endpoint_storage', 'events', 'event_endpoints', 'triggers',
  'executions', 'script_queues', 'udp_queue', 'mqtt_outgoing', 'mqtt_retained', 'lwm2m_registrations', 'lwm2m_last_known', 'lwm2m_queue',
  'files', 'file_chunks', 'report_entries', 'alerts', 'logs', 'endpoint_positions',
] as const;
/** Tables that grow with traffic (history, runs, logs): estimated on SQLite, never counted. */
const GROWING = new Set<string>(['events', 'event_endpoints', 'executions', 'logs', 'report_entries', 'endpoint_positions']);

/** Super-Admin storage (migration 0041) and the cross-account reads of its diagnostics, on SQLite and PostgreSQL. */
export class SqlAdminStore implements AdminStore {
  readonly #db: Kysely<Schema>;
  readonly #dialect: 'sqlite' | 'postgres';

  constructor(db: Kysely<Schema>, dialect: 'sqlite' | 'postgres') {
    this.#db = db;
    this.#dialect = dialect;
  }

  async controls(): Promise<AccountControl[]> {
    const rows = await this.#db.selectFrom('account_controls').selectAll().execute();
    return rows.map((row) => ({
      accountId: row.account_id,
      suspension: row.suspended_at === null ? null : { at: toIso(row.suspended_at), reason: row.suspended_reason ?? '', by: row.suspended_by ?? '' },
      limits: { maxEndpoints: row.max_endpoints, eventsPerSecond: row.events_per_second, scriptCpuMsPerMinute: row.script_cpu_ms_per_minute },
    }));
  }

  async save(control: AccountControl, updatedAt: number): Promise<void> {
    const values = {
      suspended_at: control.suspension === null ? null : Date.parse(control.suspension.at),
      suspended_reason: control.suspension?.reason ?? null,
      suspended_by: control.suspension?.by ?? null,
      max_endpoints: control.limits.maxEndpoints,
      events_per_second: control.limits.eventsPerSecond,
      script_cpu_ms_per_minute: control.limits.scriptCpuMsPerMinute,
      updated_at: updatedAt,
    };
    await this.#db
      .insertInto('account_controls')
      .values({ account_id: control.accountId, ...values })
      .onConflict((oc) => oc.column('account_id').doUpdateSet(values))
      .execute();
  }

  async findEndpoints(by: { key: string } | { id: string }, limit: number): Promise<EndpointLocation[]> {
    // `endpoints_key` (migration 0019) or the primary key: never a scan, whatever the number of accounts.
    const rows = await this.#db
      .selectFrom('endpoints')
      .innerJoin('accounts', 'accounts.id', 'endpoints.account_id')
      .innerJoin('services', 'services.id', 'endpoints.service_id')
      .select([
        'endpoints.id', 'endpoints.key', 'endpoints.account_id', 'accounts.name as account_name', 'endpoints.service_id',
        'services.name as service_name', 'services.type as service_type', 'endpoints.state', 'endpoints.last_seen_at',
      ])
      .where('key' in by ? 'endpoints.key' : 'endpoints.id', '=', 'key' in by ? by.key : by.id)
      .orderBy('endpoints.created_at')
      .orderBy('endpoints.id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({
      id: row.id,
      key: row.key,
      accountId: row.account_id,
      accountName: row.account_name,
      serviceId: row.service_id,
      serviceName: row.service_name,
      serviceType: row.service_type,
      state: row.state,
      lastSeen: row.last_seen_at === null ? null : toIso(row.last_seen_at),
    }));
  }

  async eventLag(): Promise<EventLag> {
    const last = await this.#db.selectFrom('events').select('seq').orderBy('seq', 'desc').limit(1).executeTakeFirst();
    const cursors = (await this.#db.selectFrom('event_cursor').select(['name', 'handled_through']).execute()).map((row) => ({ name: row.name, handledThrough: Number(row.handled_through) }));
    const handledThrough = cursors.find((cursor) => cursor.name === 'bus')?.handledThrough ?? 0;
    const oldest = await this.#db.selectFrom('events').select('time').where('seq', '>', handledThrough).orderBy('seq').limit(1).executeTakeFirst();
    return { lastSeq: Number(last?.seq ?? 0), handledThrough, cursors, oldestPendingTime: oldest ? Number(oldest.time) : null };
  }

  async recentRuns(window: number, top: number): Promise<RecentRuns> {
    // The newest executions by their primary key, then ordered in that bounded set only.
    const recent = this.#db.selectFrom('executions').select(['account_id', 'trigger_id', 'duration_ms', 'status', 'started_at']).orderBy('seq', 'desc').limit(window).as('recent');
    const summary = await this.#db
      .selectFrom(recent)
      .select((eb) => [eb.fn.countAll<number>().as('runs'), eb.fn.min('recent.started_at').as('since')])
      .executeTakeFirstOrThrow();
    const slowest = await this.#db
      .selectFrom(recent)
      .leftJoin('accounts', 'accounts.id', 'recent.account_id')
      .leftJoin('triggers', 'triggers.id', 'recent.trigger_id')
      .select(['recent.account_id', 'accounts.name as account_name', 'recent.trigger_id', 'triggers.name as trigger_name', 'recent.duration_ms', 'recent.status', 'recent.started_at'])
      .orderBy('recent.duration_ms', 'desc')
      .limit(top)
      .execute();
    const failures = await this.#db
      .selectFrom(recent)
      .leftJoin('triggers', 'triggers.id', 'recent.trigger_id')
      .select((eb) => ['recent.account_id', 'recent.trigger_id', 'triggers.name as trigger_name', eb.fn.countAll<number>().as('failed')])
      .where('recent.status', '=', 'failed')
      .groupBy(['recent.account_id', 'recent.trigger_id', 'triggers.name'])
      .orderBy('failed', 'desc')
      .limit(top)
      .execute();
    return {
      runs: Number(summary.runs),
      since: summary.since === null ? null : toIso(summary.since),
      slowest: slowest.map((row) => ({
        accountId: row.account_id,
        accountName: row.account_name,
        triggerId: row.trigger_id,
        triggerName: row.trigger_name,
        durationMs: Number(row.duration_ms),
        status: row.status,
        startedAt: toIso(row.started_at),
      })),
      failures: failures.map((row) => ({ accountId: row.account_id, triggerId: row.trigger_id, triggerName: row.trigger_name, failed: Number(row.failed) })),
    };
  }

  async tableSizes(budgetMs: number): Promise<TableSize[]> {
    return this.#dialect === 'postgres' ? this.#pgSizes() : this.#sqliteSizes(budgetMs);
  }

  async countEndpoints(accountId: string): Promise<number> {
    const row = await this.#db.selectFrom('endpoints').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Planner statistics: `reltuples` (-1 before the first analyse) and the relation's size with indexes and TOAST. */
  async #pgSizes(): Promise<TableSize[]> {
    const { rows } = await sql<{ table: string; rows: number | string; bytes: number | string }>`
      select c.relname as table, c.reltuples as rows, pg_total_relation_size(c.oid) as bytes
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind = 'r' and n.nspname = current_schema() and c.relname in (${sql.join([...TABLES])})`.execute(this.#db);
    const byName = new Map(rows.map((row) => [row.table, row]));
    return TABLES.filter((table) => byName.has(table)).map((table) => {
      const row = byName.get(table)!;
      const rowsEstimate = Number(row.rows);
      return { table, rows: rowsEstimate < 0 ? null : Math.round(rowsEstimate), estimated: true, bytes: Number(row.bytes) };
    });
  }

  /** Bytes from `dbstat` where SQLite was built with it; rows counted, table by table, until the time is spent. */
  async #sqliteSizes(budgetMs: number): Promise<TableSize[]> {
    const deadline = Date.now() + budgetMs;
    let bytes = new Map<string, number>();
    try {
      const { rows } = await sql<{ name: string; bytes: number }>`select name, sum(pgsize) as bytes from dbstat group by name`.execute(this.#db);
      bytes = new Map(rows.map((row) => [row.name, Number(row.bytes)]));
    } catch {
      // Built without SQLITE_ENABLE_DBSTAT_VTAB: no sizes, rows only.
    }
    const sizes: TableSize[] = [];
    for (const table of TABLES) {
      let rows: number | null = null;
      // A count blocks the embedded database while it runs: the tables that grow without bound are estimated from
      // their rowid range (two index look-ups; an upper bound once retention deleted from the middle).
      const estimated = GROWING.has(table);
      if (Date.now() < deadline) {
        const query = estimated
          ? sql<{ n: number | null }>`select max(rowid) - min(rowid) + 1 as n from ${sql.table(table)}`
          : sql<{ n: number | null }>`select count(*) as n from ${sql.table(table)}`;
        const { rows: counted } = await query.execute(this.#db).catch(() => ({ rows: [] as { n: number | null }[] }));
        rows = counted[0] === undefined ? null : Number(counted[0].n ?? 0);
      }
      sizes.push({ table, rows, estimated, bytes: bytes.get(table) ?? null });
    }
    return sizes;
  }
}
