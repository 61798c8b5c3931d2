import { sql, type Kysely } from 'kysely';

/**
 * Drops every unique constraint on `table.column` alone (PostgreSQL), found in the catalogue rather than by name:
 * the early migrations left the name to PostgreSQL (`<table>_<column>_key`). Nothing to drop is not an error, so a
 * migration that calls it can run again.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function dropPostgresUniqueOn(db: Kysely<any>, table: string, column: string): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select c.conname as name from pg_constraint c join pg_attribute a on a.attrelid = c.conrelid and a.attname = ${column}
    where c.conrelid = ${table}::regclass and c.contype = 'u' and c.conkey = array[a.attnum]`.execute(db);
  for (const { name } of rows) await sql`alter table ${sql.table(table)} drop constraint ${sql.id(name)}`.execute(db);
}
