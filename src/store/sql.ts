import { CompiledQuery, sql, type Compilable, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Page, PageRequest } from '../domain/pagination.js';

/** True for a unique-constraint violation on either dialect. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export const toMs = (iso: string): number => Date.parse(iso);
export const toIso = (ms: number): string => new Date(Number(ms)).toISOString();

/**
 * `column` starts with `prefix`, case-sensitively on both dialects (SQLite runs with case_sensitive_like),
 * with `%`, `_` and `\` in the prefix taken literally.
 */
export function startsWith(column: string, prefix: string): RawBuilder<SqlBool> {
  const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  return sql<SqlBool>`${sql.ref(column)} like ${pattern} escape '\\'`;
}

export function page<Row, Item>(rows: Row[], total: number | string | bigint, request: PageRequest, map: (row: Row) => Item): Page<Item> {
  return { items: rows.map(map), total: Number(total), limit: request.limit, offset: request.offset };
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
