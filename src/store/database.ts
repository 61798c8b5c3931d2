import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, type LogEvent, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { LRUCache } from 'lru-cache';
import type NodePostgres from 'pg';
import type { Logger } from 'pino';
import { FairSqliteDialect } from './fair-sqlite-dialect.js';
import type { Schema } from './schema.js';
import { SqliteHotPath } from './sqlite-hot-path.js';
import { startWalCheckpointer } from './wal-checkpointer.js';
import { preparingPool } from './pg-prepared.js';

export type DialectName = 'sqlite' | 'postgres';

export interface Database {
  readonly db: Kysely<Schema>;
  readonly dialect: DialectName;
  /** Where the data lives, for the start-up log line (no password). */
  readonly location: string;
  /** The embedded database's own handle, for the event pipeline's hot path (sqlite-hot-path.ts); SQLite only. */
  readonly sqlite?: SQLite.Database | undefined;
  /** The embedded database's batched writes (events, presence, registrations: one commit per turn); SQLite only. */
  readonly hot?: SqliteHotPath | undefined;
  /** Tells `listener` the SQL and time of every query through Kysely (the service's metrics: one listener). */
  onQuery(listener: QueryListener): void;
  close(): Promise<void>;
}

/** A query's SQL text, its time (ms), and whether it failed. */
export type QueryListener = (sql: string, durationMs: number, failed: boolean) => void;

/**
 * Kysely's `log` hook, handing each query's time to whoever listens. Kysely then times every query: measured
 * with the service's histogram, about 1 µs a query on SQLite (a primary-key look-up: 12.7 → 13.8 µs);
 * bench:api on SQLite moved no more than its noise (docs/operations.md).
 */
function queryLog(): { log: (event: LogEvent) => void; onQuery: (listener: QueryListener) => void } {
  let listener: QueryListener | undefined;
  return {
    log: (event) => listener?.(event.query.sql, event.queryDurationMillis, event.level === 'error'),
    onQuery: (next) => {
      listener = next;
    },
  };
}

export interface DatabaseOptions {
  readonly dataDir: string;
  readonly databaseUrl: string | undefined;
}

/** Opens PostgreSQL when a URL is given, otherwise the embedded SQLite file `<dataDir>/iotbridge.sqlite`. */
export function openDatabase(options: DatabaseOptions, logger?: Logger): Database {
  return options.databaseUrl ? openPostgres(options.databaseUrl, logger) : openSqlite(options.dataDir, logger);
}

function openSqlite(dataDir: string, logger?: Logger): Database {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'iotbridge.sqlite');
  const sqlite = new SQLite(file);
  // WAL lets readers proceed during a write; NORMAL sync is durable across process crashes in WAL mode.
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  // Under event load the default 1000-page autocheckpoint ran inside commits and cost a third of the
  // trigger pipeline's throughput (bench:events 7.9k → 10.5k events/s with these four). The log is copied
  // back from a thread of its own (wal-checkpointer.ts); the autocheckpoint is its safety net.
  sqlite.pragma('cache_size = -65536'); // 64 MiB of page cache
  sqlite.pragma('wal_autocheckpoint = 10000');
  sqlite.pragma('mmap_size = 268435456');
  sqlite.pragma('temp_store = MEMORY');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Makes LIKE case-sensitive, as on PostgreSQL, so key-prefix search means the same on both.
  sqlite.pragma('case_sensitive_like = ON');
  const queries = queryLog();
  const db = new Kysely<Schema>({ dialect: new FairSqliteDialect({ database: withStatementCache(sqlite) }), log: queries.log });
  const checkpointer = startWalCheckpointer(file, logger);
  const close = async () => {
    await checkpointer.stop();
    await db.destroy();
  };
  // Made at first use: its statements are prepared against the migrated schema.
  let hot: SqliteHotPath | undefined;
  return {
    db,
    dialect: 'sqlite',
    location: file,
    sqlite,
    get hot() {
      return (hot ??= new SqliteHotPath(db, sqlite));
    },
    onQuery: queries.onQuery,
    close,
  };
}

/**
 * Kysely prepares every query anew; preparing costs about as much as running a simple look-up, so
 * statements are kept by SQL text and reused (safe: Kysely runs one query at a time on SQLite).
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const statements = new LRUCache<string, SqliteStatement>({ max: 500 });
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      let statement = statements.get(sql);
      if (!statement) {
        statement = sqlite.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

/** node-postgres is loaded when a PostgreSQL URL is given: an installation on SQLite does not pay its start (~80 ms). */
const requireModule = createRequire(import.meta.url);

function openPostgres(url: string, logger: Logger | undefined): Database {
  const pg = requireModule('pg') as typeof NodePostgres;
  // int8 columns hold epoch milliseconds and counts, both well inside 2^53.
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, Number);
  // JSON comes back as text, as on SQLite, so one decoder reads both (a parsed jsonb string is
  // indistinguishable from JSON text otherwise).
  types.setTypeParser(pg.types.builtins.JSONB, (text: string) => text);
  types.setTypeParser(pg.types.builtins.JSON, (text: string) => text);
  const pool = new pg.Pool({ connectionString: url, max: 10, types });
  // An idle connection can be closed under us (a PostgreSQL restart, an administrator, a failover): pg then
  // emits 'error' on the pool, which would crash the process if nobody listened. The pool replaces the
  // connection on the next query; queries in flight fail with their own error.
  pool.on('error', (error) => logger?.warn({ err: error }, 'PostgreSQL connection lost; the pool reconnects on demand'));
  const queries = queryLog();
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }), log: queries.log });
  const location = redactPassword(url);
  return { db, dialect: 'postgres', location, onQuery: queries.onQuery, close: () => db.destroy() };
}

export function redactPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}
