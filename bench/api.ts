/**
 * HTTP API benchmark: authenticated `GET /endpoints/k.<key>` and `POST /endpoints` against the real service
 * (its own process) on SQLite and on PostgreSQL, with `GET /health` (a bare Fastify route: no token, no query)
 * measured in the same run as the reference. Each figure is the median of several rounds.
 *
 *   npm run bench:api                   # both dialects (PostgreSQL skipped when unreachable)
 *   BENCH_DURATION=10 BENCH_ROUNDS=5 npm run bench:api
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ENDPOINTS = 10_000;
const TOKEN = 'AT:bench-admin-token-000000000';
const POSTGRES_URL = process.env.IOTBRIDGE_TEST_POSTGRES_URL ?? `postgres://${userInfo().username}@127.0.0.1:5432/test`;

interface Figure {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    env: { ...process.env, IOTBRIDGE_HTTP_PORT: '0', IOTBRIDGE_UDP_PORT: '0', IOTBRIDGE_TCP_PORT: '0', IOTBRIDGE_COAP_PORT: '0', IOTBRIDGE_COAPS_PORT: '0', IOTBRIDGE_MQTT_PORT: '0', IOTBRIDGE_HTTP_HOST: '127.0.0.1', IOTBRIDGE_ADMIN_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"ports"'));
      if (line) resolve((JSON.parse(line) as { ports: { http: number } }).ports.http);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

async function call(base: string, method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function load(options: autocannon.Options): Promise<Figure> {
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

async function rounds(run: () => Promise<Figure>): Promise<Figure> {
  const figures: Figure[] = [];
  for (let i = 0; i < ROUNDS; i++) figures.push(await run());
  return { rps: median(figures.map((f) => f.rps)), p50: median(figures.map((f) => f.p50)), p99: median(figures.map((f) => f.p99)) };
}

async function benchDialect(name: string, env: Record<string, string>): Promise<Record<string, Figure>> {
  const { child, base } = await startServer(env);
  try {
    const service = await call(base, 'POST', '/services', { name: 'bench', type: 'lwm2m' });
    const serviceId = service.id as string;
    // A realistic table: the key looked up is one of many.
    for (let i = 0; i < ENDPOINTS; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, j) =>
          call(base, 'POST', '/endpoints', { key: `dev-${i + j}`, serviceId, tags: ['bench', `n:${(i + j) % 10}`], statusDetails: { secondsBeforeMissing: 600 } }),
        ),
      );
    }
    const headers = { authorization: `Bearer ${TOKEN}` };
    // Warm up JIT, caches and connection pools.
    await autocannon({ url: `${base}/endpoints/k.dev-4242`, headers, connections: 10, duration: 2 });

    const reference = await rounds(() => load({ url: `${base}/health` }));
    const read = await rounds(() => load({ url: `${base}/endpoints/k.dev-4242`, headers }));
    let created = 0;
    const create = await rounds(() =>
      load({
        url: `${base}/endpoints`,
        method: 'POST',
        connections: 10,
        headers: { ...headers, 'content-type': 'application/json' },
        requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ key: `new-${created++}`, serviceId, tags: ['bench'] }) }) }],
      }),
    );
    return { reference, read, create };
  } finally {
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
}

async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  const db = `iotbridge_bench_${Date.now()}`;
  await admin.query(`create database ${db}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${db}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop database if exists ${db} with (force)`);
      await client.end();
    },
  };
}

const format = (f: Figure) => `${Math.round(f.rps).toLocaleString('en-US')} req/s (p50 ${f.p50} ms, p99 ${f.p99} ms)`;

async function main(): Promise<void> {
  console.log(`# IoT Bridge API benchmark: ${cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} connections, ${ENDPOINTS} endpoints\n`);
  const rows: string[] = [];
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-'));
  try {
    const results: [string, Record<string, Figure>][] = [['SQLite', await benchDialect('sqlite', { IOTBRIDGE_DATA_DIR: dataDir })]];
    const postgres = await postgresDatabase();
    if (postgres) {
      try {
        results.push(['PostgreSQL', await benchDialect('postgres', { IOTBRIDGE_DATABASE_URL: postgres.url })]);
      } finally {
        await postgres.drop();
      }
    } else {
      console.log(`PostgreSQL not reachable at ${POSTGRES_URL}: skipped\n`);
    }
    rows.push('| storage | GET /health (reference) | GET /endpoints/k.<key> (token + query) | ratio to reference | POST /endpoints (10 connections) |');
    rows.push('|---|---|---|---|---|');
    for (const [name, r] of results) {
      rows.push(`| ${name} | ${format(r.reference!)} | ${format(r.read!)} | ${(r.read!.rps / r.reference!.rps).toFixed(2)} | ${format(r.create!)} |`);
    }
    console.log(rows.join('\n'));
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
