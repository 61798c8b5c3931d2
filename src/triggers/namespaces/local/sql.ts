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
 * Words of statements that reach outside the account's own file or change how SQLite runs, refused wherever
 * they stand outside a string literal or a comment (so a value such as 'please attach' is not refused).
 */
const FORBIDDEN = new Set(['attach', 'detach', 'vacuum', 'pragma', 'load_extension']);
/**
 * Any name beginning with `pragma`: the table-valued pragma functions (`pragma_database_list` shows the
 * database's path on the service's disk, others how SQLite was built), however the name is written or quoted.
 */
const PRAGMA_NAME = /^pragma/i;

/**
 * The words and names of a statement: bare words, and names quoted with "…", `…` or […] (this SQLite is
 * built with SQLITE_DQS=0, so "…" is always a name); string literals ('…') and comments are skipped.
 */
function words(sql: string): string[] {
  const found: string[] = [];
  const token = /'(?:[^']|'')*'?|--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|"((?:[^"]|"")*)"?|`((?:[^`]|``)*)`?|\[([^\]]*)\]?|([\w$\u0080-\u{10ffff}]+)/gu;
  for (const match of sql.matchAll(token)) {
    const word = match[1] ?? match[2] ?? match[3] ?? match[4];
    if (word !== undefined) found.push(word);
  }
  return found;
}

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
  for (const word of words(sql)) {
    if (FORBIDDEN.has(word.toLowerCase())) throw new ScriptArgumentError('ATTACH, DETACH, VACUUM, PRAGMA and load_extension are not allowed');
    if (PRAGMA_NAME.test(word)) throw new ScriptArgumentError(`${word}: names beginning with "pragma" are not allowed (pragma functions)`);
  }
  const params = args[1] ?? [];
  if (!Array.isArray(params) && (typeof params !== 'object' || params === null)) throw new ScriptArgumentError('parameters are an array or an object');
  return { sql, params: Array.isArray(params) ? params : [params] };
}

/**
 * One statement on the account's database; SQLite's errors become the script's. No transaction outlasts its
 * call: the account's next call may be answered by another call process (the worker has several, and kills
 * one whose call runs too long), where an open transaction would hold the file locked.
 */
function run<T>(context: LocalContext, work: (db: SQLite.Database) => T): T {
  const db = database(context);
  let result: T;
  try {
    result = work(db);
  } catch (error) {
    if (db.inTransaction) db.exec('rollback');
    if (error instanceof ScriptArgumentError) throw error;
    throw new ScriptArgumentError((error as Error).message);
  }
  if (db.inTransaction) {
    db.exec('rollback');
    throw new ScriptArgumentError('a transaction cannot outlast its statement (BEGIN and SAVEPOINT are undone; each statement is a transaction of its own)');
  }
  return result;
}

/**
 * `sql.*`: a SQLite database private to the account, kept on the service's disk. One statement per call;
 * parameters bind `?` (array) or `:name` (object). No statement can reach another account's file.
 */
export const sql: LocalNamespace = {
  /** sql.execute(statement, params?) → {changes, lastInsertRowid}. */
  execute: (args, context) => {
    const { sql: text, params } = statement(args);
    return run(context, (db) => {
      const result = db.prepare(text).run(...(params));
      return { changes: result.changes, lastInsertRowid: Number(result.lastInsertRowid) };
    });
  },
  /** sql.select(statement, params?) → rows as objects (at most 10000). */
  select: (args, context) => {
    const { sql: text, params } = statement(args);
    return run(context, (db) => {
      const prepared = db.prepare(text);
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
