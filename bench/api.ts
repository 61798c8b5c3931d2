/**
 * HTTP API benchmark: the real service against the program a user would run instead, side by side in one run.
 *
 *   - IoT Bridge: the service as `npm start` runs it (dist/src/cli.js), in a process of its own, on SQLite and on
 *     PostgreSQL (skipped when unreachable), with 10,000 endpoints; authenticated `GET /endpoints/k.<key>`
 *     (bearer token + query) of one of them at random, `GET /health` of the same server (no token, no query) and `POST /endpoints`.
 *   - Reference: a bare Fastify 5 hello-world (`GET /` → `{"hello":"world"}`, bench/reference/fastify-hello.mjs)
 *     started fresh in a process of its own beside each server, driven with the same autocannon settings.
 *
 * autocannon runs in this process, apart from both servers. Rounds alternate reference, /health and the read;
 * each figure is the median of BENCH_ROUNDS rounds. The table gives the read's ratio to the reference, and
 * PostgreSQL's read to SQLite's.
 *
 *   npm run bench:api                   # both dialects (PostgreSQL skipped when unreachable)
 *   BENCH_DURATION=10 BENCH_ROUNDS=5 npm run bench:api
 *   BENCH_DURATION=2 BENCH_ROUNDS=1 npm run bench:api        # a quick check
 *
 * Knobs: BENCH_DURATION (s per round, default 5), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50),
 * IOTBRIDGE_TEST_POSTGRES_URL (the PostgreSQL server; a database is created and dropped on it),
 * BENCH_TIMEOUT (s before the whole bench gives up; from the settings).
 */
import { readFile, rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { postgresDatabase, POSTGRES_URL } from './reference/postgres.js';
import { REPO_ROOT, startBridge, startChild, temporaryDirectory, watchdog, within, type Child } from './reference/processes.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ENDPOINTS = 10_000;
const TOKEN = 'AT:bench-admin-token-000000000';
/** Filling 10,000 endpoints takes a minute or two on PostgreSQL; then 2 warm-ups and 4 kinds of rounds per dialect. */
const TIMEOUT = Number(process.env.BENCH_TIMEOUT ?? 600 + 2 * (2 * 2 + ROUNDS * 4 * (DURATION + 1)));

interface Figure {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** bench/reference/fastify-hello.mjs in its own process; resolves with its base URL once it listens. */
async function startReference(): Promise<{ child: Child; base: string }> {
  let reported: ((port: number) => void) | undefined;
  const port = new Promise<number>((resolve) => (reported = resolve));
  const child = startChild('the Fastify reference', process.execPath, [path.join(REPO_ROOT, 'bench/reference/fastify-hello.mjs')], {
    onLine: (line) => {
      if (line.startsWith('{"port"')) reported?.((JSON.parse(line) as { port: number }).port);
    },
  });
  try {
    return { child, base: `http://127.0.0.1:${await within('starting the Fastify reference', 30_000, port, child)}` };
  } catch (error) {
    await child.stop();
    throw error;
  }
}

async function call(base: string, method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(60_000),
  });
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function load(options: autocannon.Options): Promise<Figure> {
  const result = await autocannon({ connections: CONNECTIONS, duration: DURATION, ...options });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const mid = (figures: Figure[]): Figure => ({ rps: median(figures.map((f) => f.rps)), p50: median(figures.map((f) => f.p50)), p99: median(figures.map((f) => f.p99)) });
const rps = (f: Figure) => Math.round(f.rps).toLocaleString('en-US');

async function benchDialect(name: string, env: Record<string, string>): Promise<Record<'fastify' | 'health' | 'read' | 'create', Figure>> {
  let reference: Child | undefined;
  let server: Child | undefined;
  try {
    const fastify = await startReference();
    reference = fastify.child;
    const started = await startBridge({ IOTBRIDGE_ADMIN_TOKEN: TOKEN, ...env });
    server = started.child;
    const base = `http://127.0.0.1:${started.ports.http!}`;
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
    // Each request reads one of the 10,000 endpoints, taken at random, as a dashboard or an integration would.
    const readAny = { url: `${base}/endpoints/k.dev-0`, headers, requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, path: `/endpoints/k.dev-${Math.floor(Math.random() * ENDPOINTS)}` }) }] };
    // Warm up JIT and connection pools of both servers, and the service's caches: each endpoint is read once, in
    // order (a couple of seconds of random reads left a quarter or more of them to the measured rounds on a slow
    // day, whose first reads cost many times a cached one). That pass is timed on its own: the first reads.
    await autocannon({ url: `${fastify.base}/`, connections: 10, duration: 2 });
    let next = 0;
    let lastResponse = 0;
    const firstStarted = performance.now();
    const firstReads = await new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon(
        {
          url: `${base}/endpoints/k.dev-0`,
          headers,
          connections: CONNECTIONS,
          amount: ENDPOINTS,
          requests: [{ setupRequest: (request: autocannon.Request) => ({ ...request, path: `/endpoints/k.dev-${next++ % ENDPOINTS}` }) }],
        },
        (error, result) => (error ? reject(error as Error) : resolve(result)),
      );
      // Timed to the last answer: a run of a fixed amount ends on autocannon's next one-second tick.
      instance.on('response', () => (lastResponse = performance.now()));
    });
    if (firstReads.non2xx > 0 || firstReads.errors > 0) throw new Error(`first reads: ${firstReads.non2xx} non-2xx, ${firstReads.errors} errors`);
    const first: Figure = { rps: (firstReads.requests.total * 1000) / (lastResponse - firstStarted), p50: firstReads.latency.p50, p99: firstReads.latency.p99 };
    console.log(`${name}: first read of each of the ${ENDPOINTS.toLocaleString('en-US')} endpoints (not yet cached): ${rps(first)} req/s (p50 ${first.p50} ms, p99 ${first.p99} ms)`);
    await autocannon({ ...readAny, connections: 10, duration: 2 });

    // Rounds alternate, so that a slow spell of the machine weighs on the reference and the service alike.
    const figures = { fastify: [] as Figure[], health: [] as Figure[], read: [] as Figure[] };
    for (let round = 0; round < ROUNDS; round++) {
      figures.fastify.push(await load({ url: `${fastify.base}/` }));
      figures.health.push(await load({ url: `${base}/health` }));
      figures.read.push(await load(readAny));
      console.log(`${name} round ${round + 1}: Fastify hello-world ${rps(figures.fastify.at(-1)!)}, GET /health ${rps(figures.health.at(-1)!)}, GET /endpoints/k.<key> ${rps(figures.read.at(-1)!)} req/s`);
    }
    let created = 0;
    const create: Figure[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      create.push(
        await load({
          url: `${base}/endpoints`,
          method: 'POST',
          connections: 10,
          headers: { ...headers, 'content-type': 'application/json' },
          requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ key: `new-${created++}`, serviceId, tags: ['bench'] }) }) }],
        }),
      );
    }
    return { fastify: mid(figures.fastify), health: mid(figures.health), read: mid(figures.read), create: mid(create) };
  } finally {
    await server?.stop();
    await reference?.stop();
  }
}

const format = (f: Figure) => `${rps(f)} req/s (p50 ${f.p50} ms, p99 ${f.p99} ms)`;

async function main(): Promise<void> {
  watchdog(TIMEOUT, 'bench:api');
  const fastifyVersion = (JSON.parse(await readFile(path.join(REPO_ROOT, 'node_modules/fastify/package.json'), 'utf8')) as { version: string }).version;
  console.log(
    `# IoT Bridge API benchmark: ${cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} connections, ${ENDPOINTS} endpoints; ` +
      `reference: bare Fastify ${fastifyVersion} hello-world in its own process, started beside each server; autocannon in the bench's process\n`,
  );
  const rows: string[] = [];
  const dataDir = await temporaryDirectory('iotbridge-bench-');
  const postgresDataDir = await temporaryDirectory('iotbridge-bench-pg-');
  try {
    const results: [string, Record<string, Figure>][] = [['SQLite', await benchDialect('SQLite', { IOTBRIDGE_DATA_DIR: dataDir })]];
    const postgres = await postgresDatabase();
    if (postgres) {
      try {
        results.push(['PostgreSQL', await benchDialect('PostgreSQL', { IOTBRIDGE_DATABASE_URL: postgres.url, IOTBRIDGE_DATA_DIR: postgresDataDir })]);
      } finally {
        await postgres.drop();
      }
    } else {
      console.log(`PostgreSQL not reachable at ${POSTGRES_URL}: skipped\n`);
    }
    const sqliteRead = results[0]![1].read!;
    rows.push(
      '| storage | GET /endpoints/k.<key>, bearer token | bare Fastify hello-world, own process (reference) | ratio to reference (target ≥ 0.5) | read / SQLite\'s read (target ≥ 0.8) | GET /health, same server | read / health | POST /endpoints (10 connections) |',
    );
    rows.push('|---|---|---|---|---|---|---|---|');
    for (const [name, r] of results) {
      rows.push(
        `| ${name} | ${format(r.read!)} | ${format(r.fastify!)} | ${(r.read!.rps / r.fastify!.rps).toFixed(2)} | ${(r.read!.rps / sqliteRead.rps).toFixed(2)} | ${format(r.health!)} | ${(r.read!.rps / r.health!.rps).toFixed(2)} | ${format(r.create!)} |`,
      );
    }
    console.log(`\n${rows.join('\n')}`);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
    await rm(postgresDataDir, { recursive: true, force: true });
  }
}

await main();
