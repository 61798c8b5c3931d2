/**
 * The JSON column type and the helpers that write and read JSON columns (see schema.ts for the conventions).
 * Part of the schema; schema.ts re-exports the helpers.
 */
import type { ColumnType } from 'kysely';

export type Json = ColumnType<unknown, string, string>;

export function toJson(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** Reads a JSON column: both dialects hand it over as JSON text (see database.ts). */
export function fromJson<T>(value: unknown): T {
  return JSON.parse(value as string) as T;
}
