import { setImmediate } from 'node:timers/promises';
import { CompiledQuery, PostgresAdapter, sql, type Compilable, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Schema } from './schema.js';
import { isoTime, timeMs } from '../domain/time.js';

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * True when `db` (or a transaction of it) is on PostgreSQL. Bulk inserts there send one array per column
 * (`unnest`): the same short statement whatever the number of rows, instead of a VALUES list built, sent and
 * parsed anew for every batch (docs/performance.md, session 28).
 */
export function onPostgres(db: Kysely<Schema>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export const toMs = timeMs;
/** Drivers may hand back a bigint or numeric text. */
export const toIso = (ms: number | bigint | string): string => isoTime(Number(ms));

/**
 * `column` starts with `prefix`, case-sensitively on both dialects (SQLite runs with case_sensitive_like),
 * with `%`, `_` and `\` in the prefix taken literally.
 */
export function startsWith(column: string, prefix: string): RawBuilder<SqlBool> {
  const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;
}

/**
 * One page of a list and the total of the same query: `rows` adds the selection and order to `base`
 * (which holds only the filters), the count runs on `base` itself.
 */
export async function pageOf<DB, TB extends keyof DB, Row, Item>(
  base: SelectQueryBuilder<DB, TB, object>,
  rows: (query: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, Row>,
  request: PageRequest,
  map: (row: Row) => Item,
): Promise<Page<Item>> {
  // Kysely cannot resolve the selection type while DB and TB are still generic: name it.
  const counted = base.select(sql<number | string>`count(*)`.as('n')) as unknown as SelectQueryBuilder<DB, TB, { n: number | string }>;
  const [found, count] = await Promise.all([rows(base).limit(request.limit).offset(request.offset).execute(), counted.executeTakeFirstOrThrow()]);
  return { items: found.map(map), total: Number(count.n), limit: request.limit, offset: request.offset };
}

/**
 * A query compiled to SQL once; each call runs that SQL with new parameters, skipping Kysely's build and
 * compile steps (a third of a simple look-up's cost). For hot paths only. Parameters go in the order the
 * builder placed them (where clauses in order, then limit); the API tests exercise each one.
 */
export function precompiled<DB, Row>(db: Kysely<DB>, query: Compilable<Row>): (parameters: unknown[]) => Promise<Row[]> {
  const { sql: text } = query.compile();
  return async (parameters) => (await db.executeQuery<Row>(CompiledQuery.raw(text, parameters))).rows;
}

/** Rows deleted per statement by {@link deleteSeqsBelow}. */
const DELETE_CHUNK = 10_000;

/**
 * Deletes the rows of a seq-numbered table below `bound`, oldest first, DELETE_CHUNK at a time with a turn
 * of the event loop between: one statement for an hour's (or a first run's years of) rows would hold the
 * database, and on SQLite the whole service, for seconds. Returns how many rows went.
 */
export async function deleteSeqsBelow(db: Kysely<Schema>, table: 'events' | 'executions', bound: number): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await sql`delete from ${sql.table(table)} where seq in (select seq from ${sql.table(table)} where seq < ${bound} order by seq limit ${DELETE_CHUNK})`.execute(db);
    const count = Number(result.numAffectedRows ?? 0);
    deleted += count;
    if (count < DELETE_CHUNK) return deleted;
    await setImmediate();
  }
}
