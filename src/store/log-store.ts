import { setImmediate } from 'node:timers/promises';
import { CompiledQuery, sql, type Expression, type ExpressionBuilder, type Kysely, type Selectable, type SqlBool } from 'kysely';
import { LOG_LEVELS, type LogChunk, type LogCursor, type LogEntry, type LogFilter, type LogLevel, type LogRow, type LogStore } from '../logs/model.js';
import type { DialectName } from './database.js';
import { fromJson, type LogsTable, type Schema } from './schema.js';
import { toIso } from './sql.js';

/**
 * Rows per INSERT, largest first: a batch is cut into statements of these sizes, each compiled to SQL once
 * (building a 500-row insert cost Kysely half as much as running it) and, on SQLite, prepared once. Few sizes,
 * so few statements in the statement cache. 9 parameters a row: well under both dialects' limits.
 */
const INSERT_SIZES = [500, 100, 20, 5, 1] as const;
/** Rows of one bulk insert after which PostgreSQL's statistics are refreshed at once. */
const ANALYZE_AFTER_ROWS = 10_000;
/** Entries deleted per statement by the retention sweep, a turn of the event loop between. */
const DELETE_CHUNK = 10_000;

type Where = ExpressionBuilder<Schema, 'logs'>;

/** Account logs (migration 0035), on SQLite and PostgreSQL alike. */
export class SqlLogStore implements LogStore {
  readonly #db: Kysely<Schema>;
  readonly #dialect: DialectName;
  readonly #insertSql = new Map<number, string>();

  constructor(db: Kysely<Schema>, dialect: DialectName) {
    this.#db = db;
    this.#dialect = dialect;
  }

  async insert(rows: readonly LogRow[]): Promise<void> {
    const statements: CompiledQuery[] = [];
    let start = 0;
    for (const size of INSERT_SIZES) {
      for (; rows.length - start >= size; start += size) statements.push(CompiledQuery.raw(this.#insertOf(size), parameters(rows, start, size)));
    }
    if (statements.length === 1) await this.#db.executeQuery(statements[0]!);
    else if (statements.length > 1) {
      await this.#db.transaction().execute(async (trx) => {
        for (const statement of statements) await trx.executeQuery(statement);
      });
    }
    // After a bulk load the planner has no statistics of it until autovacuum comes by (a minute or more), and
    // sorts an account's whole log for each step of a search instead of walking the index backwards.
    if (this.#dialect === 'postgres' && rows.length >= ANALYZE_AFTER_ROWS) await sql`analyze logs`.execute(this.#db);
  }

  /** The SQL of an insert of `size` rows, its parameters in the order {@link parameters} gives them. */
  #insertOf(size: number): string {
    let text = this.#insertSql.get(size);
    if (text === undefined) {
      text = this.#db.insertInto('logs').values(Array.from({ length: size }, () => ({ ...SHAPE }))).compile().sql;
      this.#insertSql.set(size, text);
    }
    return text;
  }

  async chunk(accountId: string, filter: LogFilter, before: LogCursor | undefined, span: number, limit: number): Promise<LogChunk> {
    // The span-th entry back is where this step ends: found on the index alone, so a step costs `span` index
    // entries and at most `span` rows read for the filters, however rare the matches are.
    const boundary = await this.#db
      .selectFrom('logs')
      .select(['time', 'seq'])
      .where((eb) => eb.and(range(eb, accountId, filter, before)))
      .orderBy('time', 'desc')
      .orderBy('seq', 'desc')
      .limit(1)
      .offset(span - 1)
      .executeTakeFirst();
    const reached = boundary && { time: Number(boundary.time), seq: Number(boundary.seq) };
    const rows = await this.#db
      .selectFrom('logs')
      .selectAll()
      .where((eb) => {
        const conditions = range(eb, accountId, filter, before);
        if (reached) conditions.push(eb('time', '>=', reached.time), eb.or([eb('time', '>', reached.time), eb('seq', '>=', reached.seq)]));
        return eb.and([...conditions, ...this.#matching(eb, filter)]);
      })
      .orderBy('time', 'desc')
      .orderBy('seq', 'desc')
      .limit(limit)
      .execute();
    return { items: rows.map(toEntry), reached, more: reached !== undefined };
  }

  async deleteOlderThan(time: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const chunk = this.#db.selectFrom('logs').select('seq').where('time', '<', time).orderBy('time').limit(DELETE_CHUNK);
      const result = await this.#db.deleteFrom('logs').where('seq', 'in', chunk).executeTakeFirst();
      const count = Number(result.numDeletedRows);
      deleted += count;
      if (count < DELETE_CHUNK) return deleted;
      await setImmediate();
    }
  }

  /** The filters other than the time range: checked on the rows of a step. */
  #matching(eb: Where, filter: LogFilter): Expression<SqlBool>[] {
    const conditions: Expression<SqlBool>[] = [];
    if (filter.level !== undefined && filter.level !== 'debug') conditions.push(eb('level', 'in', atOrAbove(filter.level)));
    if (filter.sources !== undefined && filter.sources.length > 0) conditions.push(eb('source', 'in', [...filter.sources]));
    if (filter.endpointId !== undefined) conditions.push(eb('endpoint_id', '=', filter.endpointId));
    if (filter.endpointKey !== undefined) conditions.push(eb('endpoint_key', '=', filter.endpointKey));
    if (filter.triggerId !== undefined) conditions.push(eb('trigger_id', '=', filter.triggerId));
    if (filter.text !== undefined && filter.text !== '') {
      const pattern = `%${filter.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      // SQLite runs with case_sensitive_like: both sides go through its lower() (ASCII), so they fold alike.
      conditions.push(this.#dialect === 'postgres' ? sql<SqlBool>`message ilike ${pattern} escape '\\'` : sql<SqlBool>`lower(message) like lower(${pattern}) escape '\\'`);
    }
    return conditions;
  }
}

/** The account, the filter's time range, and entries strictly older than `before`: what the index bounds. */
function range(eb: Where, accountId: string, filter: LogFilter, before: LogCursor | undefined): Expression<SqlBool>[] {
  const conditions: Expression<SqlBool>[] = [eb('account_id', '=', accountId)];
  if (filter.from !== undefined) conditions.push(eb('time', '>=', filter.from));
  if (filter.to !== undefined) conditions.push(eb('time', '<', filter.to));
  // `time <= t` bounds the index scan; the OR only sorts out the entries of that same millisecond.
  if (before) conditions.push(eb('time', '<=', before.time), eb.or([eb('time', '<', before.time), eb('seq', '<', before.seq)]));
  return conditions;
}

function atOrAbove(level: LogLevel): LogLevel[] {
  return LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);
}

/** A row of every column, in the order {@link parameters} lists them: what the inserts are compiled from. */
const SHAPE: Omit<LogsTable, 'seq'> = { account_id: '', time: 0, level: '', source: '', message: '', endpoint_id: '', endpoint_key: '', trigger_id: '', data: '' };

function parameters(rows: readonly LogRow[], start: number, size: number): unknown[] {
  const values: unknown[] = [];
  for (let i = start; i < start + size; i++) {
    const row = rows[i]!;
    values.push(row.accountId, row.time, row.level, row.source, row.message, row.endpointId, row.endpointKey, row.triggerId, row.data);
  }
  return values;
}

function toEntry(row: Selectable<LogsTable>): LogEntry & { cursor: LogCursor } {
  const cursor = { time: Number(row.time), seq: Number(row.seq) };
  return {
    id: `${cursor.time}.${cursor.seq}`,
    time: toIso(row.time),
    level: row.level as LogLevel,
    source: row.source,
    message: row.message,
    endpointId: row.endpoint_id,
    endpointKey: row.endpoint_key,
    triggerId: row.trigger_id,
    data: row.data === null ? null : fromJson<Record<string, unknown>>(row.data),
    cursor,
  };
}
