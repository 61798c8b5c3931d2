import { Counter, type Registry } from 'prom-client';
import { FastHistogram } from './fast-series.js';
import type { QueryListener } from '../store/database.js';

const KINDS = new Set(['select', 'insert', 'update', 'delete']);
const FIRST_WORD = /^\s*([a-zA-Z]+)/;

/**
 * `select`, `insert`, `update` or `delete`, from the SQL's first word; `other` for the rest (`with …`,
 * `begin`, DDL). Never the SQL itself: a label per query text would be a series per query.
 */
export function queryKind(sql: string): string {
  const word = FIRST_WORD.exec(sql)?.[1]?.toLowerCase();
  return word !== undefined && KINDS.has(word) ? word : 'other';
}

/**
 * Store query durations by dialect and kind (`iotbridge_db_query_duration_seconds`) and failed queries
 * (`iotbridge_db_query_errors_total`), from every query that goes through Kysely (Database.onQuery). The
 * SQLite event hot path's own prepared statements (sqlite-hot-path.ts) do not go through it and are not counted.
 */
export function observeQueries(registry: Registry, dialect: string, onQuery: (listener: QueryListener) => void): void {
  const durations = new FastHistogram({
    name: 'iotbridge_db_query_duration_seconds',
    help: 'Time of store queries (through Kysely), by dialect and kind (select, insert, update, delete, other)',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
  }).register(registry);
  const errors = new Counter({ name: 'iotbridge_db_query_errors_total', help: 'Store queries that failed, by dialect and kind', labelNames: ['dialect', 'kind'], registers: [registry] });
  onQuery((sql, durationMs, failed) => {
    const kind = queryKind(sql);
    durations.observe(kind, { dialect, kind }, durationMs / 1000);
    if (failed) errors.inc({ dialect, kind });
  });
}
