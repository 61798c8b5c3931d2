import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { IotBridge } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import type { EventBus } from '../../src/events/event-bus.js';
import { REPO_ROOT } from './repo.js';

export const ADMIN_TOKEN = 'AT:test-admin-token-0123456789';

/** PostgreSQL used by the tests; a fresh database is made from it for each service started. */
export const TEST_POSTGRES_URL = process.env.IOTBRIDGE_TEST_POSTGRES_URL ?? `postgres://${userInfo().username}@127.0.0.1:5432/test`;

export interface Dialect {
  readonly name: 'sqlite' | 'postgres';
  /** Why the dialect's tests are skipped on this machine, or false. */
  readonly skip: string | false;
}

async function postgresReachable(): Promise<string | false> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return false;
  } catch (error) {
    // With CI set the PostgreSQL half must run: its tests then fail on the connection, saying why.
    if (process.env.CI) return false;
    return `PostgreSQL not reachable at ${TEST_POSTGRES_URL} (${(error as Error).message}); set IOTBRIDGE_TEST_POSTGRES_URL`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Every storage dialect; the API suites run once per entry. PostgreSQL is skipped, and says why, where it is not reachable. */
export const DIALECTS: readonly Dialect[] = [
  { name: 'sqlite', skip: false },
  { name: 'postgres', skip: await postgresReachable() },
];

export interface Response<T = any> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

export interface RequestOptions {
  readonly token?: string | null;
  /** Act in this sub-account: appended to the token as `:<accountId>`. */
  readonly account?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export interface StartOptions {
  /** Subscribe consumers before queued events of an earlier run are dispatched. */
  readonly beforeBusStart?: (bus: EventBus) => void | Promise<void>;
  /** Receives the service's log lines (JSON text, info level and above) instead of silence. */
  readonly logLines?: (line: string) => void;
  /** The time (epoch ms) the licence is judged at: tests move it instead of waiting. */
  readonly clock?: () => number;
}

export interface TestService {
  readonly baseUrl: string;
  /** Bound ports by server name (`http`, `udp`, `tcp`, …). */
  readonly ports: Readonly<Record<string, number>>;
  readonly bridge: IotBridge;
  readonly rootAccountId: string;
  request<T = any>(method: string, urlPath: string, options?: RequestOptions): Promise<Response<T>>;
  /** Stops this service and starts a new one on the same storage (a process restart). */
  restart(options?: StartOptions): Promise<TestService>;
  stop(): Promise<void>;
}

/** A new PostgreSQL database for one test (a spawned service's `IOTBRIDGE_DATABASE_URL`), and how to drop it. */
export async function throwAwayPostgres(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `iotbridge_test_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const template = await migratedTemplate();
  // A copy of an already-migrated database: about a tenth of the time of migrating an empty one, for ~100 databases a run.
  // Test databases need no durability against a PostgreSQL crash (a killed service still loses nothing committed).
  await adminQuery(`create database ${name} template ${template}`, `alter database ${name} set synchronous_commit = off`);
  return { url: postgresUrl(name), drop: () => adminQuery(`drop database if exists ${name} with (force)`) };
}

function postgresUrl(database: string): string {
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

let template: Promise<string> | undefined;

/**
 * The name of a database holding the schema of this tree's migrations, made once per migration set (its name
 * carries a hash of the migration sources) and shared by every test process through an advisory lock.
 */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const hash = createHash('sha256');
    const directory = path.join(REPO_ROOT, 'src/store/migrations');
    for (const file of (await readdir(directory)).sort()) hash.update(file).update(await readFile(path.join(directory, file)));
    hash.update(await readFile(path.join(REPO_ROOT, 'src/store/migrate.ts')));
    const name = `iotbridge_template_${hash.digest('hex').slice(0, 16)}`;
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    try {
      await admin.query('select pg_advisory_lock(4242001)');
      const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (rowCount === 0) {
        // Built under another name and renamed when whole, so a killed run never leaves a half-migrated template.
        const building = `${name}_building`;
        await admin.query(`drop database if exists ${building} with (force)`);
        await admin.query(`create database ${building}`);
        const database = openDatabase({ dataDir: tmpdir(), databaseUrl: postgresUrl(building) });
        try {
          await migrateToLatest(database);
        } finally {
          await database.close();
        }
        await admin.query(`alter database ${building} rename to ${name}`);
      }
      return name;
    } finally {
      await admin.query('select pg_advisory_unlock(4242001)').catch(() => undefined);
      await admin.end();
    }
  })();
  return template;
}

/** Starts the real service on an ephemeral port with its own storage (temp directory or a new PostgreSQL database). */
export async function startService(dialect: Dialect['name'], overrides: Partial<Config> = {}, options: StartOptions = {}): Promise<TestService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-test-'));
  let databaseUrl: string | undefined;
  let dropDatabase = async () => {};
  if (dialect === 'postgres') ({ url: databaseUrl, drop: dropDatabase } = await throwAwayPostgres());
  const config = loadConfig({}, { httpPort: 0, httpHost: '127.0.0.1', udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, dataDir, databaseUrl, adminToken: ADMIN_TOKEN, ...overrides });
  const cleanUp = async () => {
    await rm(dataDir, { recursive: true, force: true });
    await dropDatabase();
  };
  return run(config, options, cleanUp);
}

async function run(config: Config, options: StartOptions, cleanUp: () => Promise<void>): Promise<TestService> {
  const logger = options.logLines
    ? pino({ level: 'info' }, { write: options.logLines })
    : pino({ level: process.env.IOTBRIDGE_TEST_LOG_LEVEL ?? 'silent' });
  const bridge = new IotBridge(config, logger, options);
  const started = await bridge.start();
  const baseUrl = `http://127.0.0.1:${started.ports.http}`;

  return {
    baseUrl,
    ports: started.ports,
    bridge,
    rootAccountId: started.rootAccountId,
    async request(method, urlPath, options = {}) {
      const token = options.token === undefined ? ADMIN_TOKEN : options.token;
      const headers: Record<string, string> = { ...options.headers };
      if (token !== null) headers.authorization = `Bearer ${token}${options.account ? `:${options.account}` : ''}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      }
      const response = await fetch(baseUrl + urlPath, { method, headers, body });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: (text === '' ? undefined : safeJson(text)) as never };
    },
    async restart(restartOptions = {}) {
      await bridge.stop();
      return run(config, restartOptions, cleanUp);
    },
    async stop() {
      await bridge.stop();
      await cleanUp();
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function adminQuery(...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}
