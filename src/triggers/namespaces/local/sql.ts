import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { ScriptArgumentError } from '../namespace.js';
import type { LocalContext, LocalNamespace } from './local.js';

/** Largest database an account may grow (pages of 4 KiB). */
const MAX_PAGES = 25_600; // 100 MiB
const MAX_ROWS = 10_000;

/**
 * Statements that reach outside the account's own file or change how SQLite runs. Checked with string
 * literals and comments removed, so a value such as 'please attach' is not refused.
 */
const FORBIDDEN = /\b(attach|detach|vacuum|pragma|load_extension)\b/i;

const open = new LRUCache<string, SQLite.Database>({
  max: 50,
  dispose: (db) => db.close(),
});

/** The account's own database: `<IOTBRIDGE_SQL_DIR>/<accountId>.sqlite`, opened on first use. */
function database(context: LocalContext): SQLite.Database {
  let db = open.get(context.accountId);
  if (!db) {
    const dir = process.env.IOTBRIDGE_SQL_DIR;
    if (!dir) throw new ScriptArgumentError('sql is not configured on this service');
    if (!/^[A-Za-z0-9_-]+$/.test(context.accountId)) throw new ScriptArgumentError('bad account');
    mkdirSync(dir, { recursive: true });
    db = new SQLite(path.join(dir, `${context.accountId}.sqlite`));
    db.pragma('journal_mode = WAL');
    db.pragma(`max_page_count = ${MAX_PAGES}`);
    db.pragma('trusted_schema = OFF');
    open.set(context.accountId, db);
  }
  return db;
}

function statement(args: unknown[]): { sql: string; params: unknown[] } {
  const sql = args[0];
  if (typeof sql !== 'string' || sql.trim() === '') throw new ScriptArgumentError('give one SQL statement');
  const bare = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
  if (FORBIDDEN.test(bare)) throw new ScriptArgumentError('ATTACH, DETACH, VACUUM, PRAGMA and load_extension are not allowed');
  const params = args[1] ?? [];
  if (!Array.isArray(params) && (typeof params !== 'object' || params === null)) throw new ScriptArgumentError('parameters are an array or an object');
  return { sql, params: Array.isArray(params) ? params : [params] };
}

function run<T>(work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof ScriptArgumentError) throw error;
    throw new ScriptArgumentError((error as Error).message);
  }
}

/**
 * `sql.*`: a SQLite database private to the account, kept on the service's disk. One statement per call;
 * parameters bind `?` (array) or `:name` (object). No statement can reach another account's file.
 */
export const sql: LocalNamespace = {
  /** sql.execute(statement, params?) → {changes, lastInsertRowid}. */
  execute: (args, context) => {
    const { sql: text, params } = statement(args);
    return run(() => {
      const result = database(context).prepare(text).run(...(params));
      return { changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) };
    });
  },
  /** sql.select(statement, params?) → rows as objects (at most 10000). */
  select: (args, context) => {
    const { sql: text, params } = statement(args);
    return run(() => {
      const prepared = database(context).prepare(text);
      if (!prepared.reader) throw new ScriptArgumentError('select reads; use sql.execute to change data');
      const rows: unknown[] = [];
      for (const row of prepared.iterate(...(params))) {
        rows.push(row);
        if (rows.length >= MAX_ROWS) break;
      }
      return rows;
    });
  },
};
