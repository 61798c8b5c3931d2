/**
 * The JSON column type and the helpers that write and read JSON columns (see schema.ts for the conventions).
 * Part of the schema; schema.ts re-exports the helpers.
 */
import type { ColumnType } from 'kysely';
import { storableJson } from '../domain/storable-text.js';

export type Json = ColumnType<unknown, string, string>;

/** A value as a JSON column stores it: NUL and unpaired surrogates in its strings become U+FFFD (storable-text.ts). */
export function toJson(value: unknown): string {
  return storableJson(value);
}

/** Reads a JSON column: both dialects hand it over as JSON text (see database.ts). */
export function fromJson<T>(value: unknown): T {
  return JSON.parse(value as string) as T;
}
