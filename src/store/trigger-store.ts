import { sql, type Kysely, type Selectable } from 'kysely';
import type { PageRequest } from '../domain/pagination.js';
import type { Execution, ExecutionFilter, ExecutionStore } from '../triggers/executions.js';
import type { TriggerFilter } from '../triggers/filters.js';
import type { RunStatus } from '../triggers/sandbox/protocol.js';
import type { GlobalVariable, Trigger, TriggerStore } from '../triggers/triggers.js';
import { fromJson, toJson, type ExecutionsTable, type Schema, type TriggersTable } from './schema.js';
import { float4Array, int4Array, int8Array, textArray } from './pg-binary-arrays.js';
import { prepared } from './pg-prepared.js';
import { deleteSeqsBelow, onPostgres, pageOf, toIso, toMs } from './sql.js';
import { executionRow, isPlainExecution } from './execution-rows.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';

const EXECUTIONS_INSERT = sql.raw('insert into executions (id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups)');

export class SqlTriggerStore implements TriggerStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insert(trigger: Trigger): Promise<void> {
    await this.#db.insertInto('triggers').values(toRow(trigger)).execute();
  }

  async get(accountId: string, id: string): Promise<Trigger | undefined> {
    const row = await this.#db.selectFrom('triggers').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toTrigger(row);
  }

  async findByName(accountId: string, name: string): Promise<Trigger | undefined> {
    const row = await this.#db.selectFrom('triggers').selectAll().where('account_id', '=', accountId).where('name', '=', name).orderBy('created_at').executeTakeFirst();
    return row && toTrigger(row);
  }

  async list(accountId: string, request: PageRequest) {
    const base = this.#db.selectFrom('triggers').where('account_id', '=', accountId);
    return pageOf(base, (q) => q.selectAll().orderBy('name').orderBy('id'), request, toTrigger);
  }

  async active(accountId: string): Promise<Trigger[]> {
    const rows = await this.#db
      .selectFrom('triggers')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('enabled', '=', 1)
      .where('library', '=', 0)
      .orderBy('name')
      .execute();
    return rows.map(toTrigger);
  }

  async update(trigger: Trigger): Promise<void> {
    const { id: _id, account_id: _account, created_at: _created, ...changes } = toRow(trigger);
    await this.#db.updateTable('triggers').set(changes).where('id', '=', trigger.id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('triggers').where('id', '=', id).execute();
  }
}

export class SqlExecutionStore implements ExecutionStore {
  readonly #db: Kysely<Schema>;

  readonly #hot: SqliteHotPath | undefined;
  readonly recordOne: ((execution: Execution) => Promise<void>) | undefined;

  constructor(db: Kysely<Schema>, hot?: SqliteHotPath) {
    this.#db = db;
    this.#hot = hot;
    this.recordOne = hot && ((execution) => hot.recordExecution(execution));
  }

  async deleteOlderThan(time: number): Promise<number> {
    // Records are numbered in the order their runs ended, close to the order they started: the old ones are
    // the lowest seqs, up to the first record kept, found by walking the primary key through them.
    const kept = await this.#db.selectFrom('executions').select('seq').where('started_at', '>=', time).orderBy('seq').limit(1).executeTakeFirst();
    const bound = kept ? Number(kept.seq) : Number((await this.#db.selectFrom('executions').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirst())?.seq ?? 0) + 1;
    return deleteSeqsBelow(this.#db, 'executions', bound);
  }

  async insert(executions: readonly Execution[]): Promise<void> {
    if (this.#hot) return this.#hot.recordExecutions(executions);
    if (executions.length === 0) return;
    if (onPostgres(this.#db)) return this.#insertAsArrays(executions);
    // Chunks keep each statement under SQLite's bound-parameter limit.
    for (let i = 0; i < executions.length; i += 500) await this.#db.insertInto('executions').values(executions.slice(i, i + 500).map(executionRow)).execute();
  }

  /** PostgreSQL: one array per column (as the events: src/store/sql.ts `onPostgres`), prepared by name (src/store/pg-prepared.ts). */
  async #insertAsArrays(executions: readonly Execution[]): Promise<void> {
    const rows = executions.map(executionRow);
    const column = <K extends keyof (typeof rows)[number]>(name: K) => rows.map((row) => row[name]);
    // Every record's columns up to its status: the same arrays in both statements.
    const outcome = sql`${textArray(column('id'))}::text[], ${textArray(column('account_id'))}::text[], ${textArray(column('trigger_id'))}::text[],
      ${textArray(column('event_id'))}::text[], ${textArray(column('event_type'))}::text[], ${int8Array(column('started_at'))}::bigint[],
      ${float4Array(column('duration_ms'))}::real[], ${textArray(column('status'))}::text[]`;
    if (executions.every(isPlainExecution)) {
      // Most batches: the last six columns are constants, parsed once a statement rather than once a row (`jsonb`).
      await sql`${sql.raw(prepared('insert-plain-executions'))}${EXECUTIONS_INSERT}
        select id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, null, null, '[]'::jsonb, 0, '{}'::jsonb, '[]'::jsonb
        from unnest(${outcome}) as t(id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status)`.execute(this.#db);
      return;
    }
    await sql`${sql.raw(prepared('insert-executions'))}${EXECUTIONS_INSERT}
      select id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs::jsonb, test, context::jsonb, groups::jsonb
      from unnest(${outcome}, ${textArray(column('error'))}::text[], ${int4Array(column('line'))}::integer[], ${textArray(column('logs'))}::text[],
        ${int4Array(column('test'))}::integer[], ${textArray(column('context'))}::text[], ${textArray(column('groups'))}::text[])
        as t(id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups)`.execute(this.#db);
  }

  async list(accountId: string, filter: ExecutionFilter, request: PageRequest) {
    let base = this.#db.selectFrom('executions').where('account_id', '=', accountId);
    if (filter.triggerId !== undefined) base = base.where('trigger_id', '=', filter.triggerId);
    if (filter.status !== undefined) base = base.where('status', '=', filter.status);
    if (filter.eventId !== undefined) base = base.where('event_id', '=', filter.eventId);
    return pageOf(base, (q) => q.selectAll().orderBy('seq', 'desc'), request, toExecution);
  }
}

function toRow(trigger: Trigger) {
  return {
    id: trigger.id,
    account_id: trigger.accountId,
    name: trigger.name,
    events: toJson(trigger.events),
    filters: toJson(trigger.filters),
    script: trigger.script,
    enabled: trigger.enabled ? 1 : 0,
    library: trigger.library ? 1 : 0,
    globals: toJson(trigger.globals),
    form: toJson(trigger.form),
    version: trigger.version,
    created_at: toMs(trigger.createdAt),
    updated_at: toMs(trigger.updatedAt),
  };
}

function toTrigger(row: Selectable<TriggersTable>): Trigger {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    events: fromJson<string[]>(row.events),
    filters: fromJson<TriggerFilter[]>(row.filters),
    script: row.script,
    enabled: row.enabled === 1,
    library: row.library === 1,
    globals: fromJson<Record<string, GlobalVariable>>(row.globals),
    form: fromJson<unknown>(row.form),
    version: row.version,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function toExecution(row: Selectable<ExecutionsTable>): Execution {
  return {
    id: row.id,
    accountId: row.account_id,
    triggerId: row.trigger_id,
    eventId: row.event_id,
    eventType: row.event_type,
    startedAt: toIso(row.started_at),
    durationMs: Number(row.duration_ms),
    status: row.status as RunStatus,
    error: row.error,
    line: row.line,
    logs: fromJson<string[]>(row.logs),
    test: row.test === 1,
    context: fromJson<Record<string, unknown>>(row.context),
    groups: fromJson<string[]>(row.groups),
  };
}
