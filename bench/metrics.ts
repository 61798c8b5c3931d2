/**
 * Metrics benchmark (issue 20): one account of N endpoints (default 100,000; three services, a few status details,
 * parameters and tags each, storage on 1 in 100, 90 % heard from in the last day, 70 % connected), 50 triggers
 * and 20,000 execution records over the last day, written straight into the database in batches (the store's
 * tables through Kysely, 1,000 rows per statement). Then, over HTTP against the service in this process, the
 * median and 90th percentile of R calls (after 2 warm-up calls) of:
 *   /metrics/status?object=endpoint&sort=-lastActivity&limit=100, /metrics/status (all objects, default sort),
 *   other sorts, resolve=true, /metrics/distribution?field=state, /metrics/fields (answered from the census cache),
 * beside the reference: `GET /health` of the same server (unauthenticated, answers a constant: what HTTP,
 * routing and serialisation cost alone). And one census (the first /metrics/fields call of the account, which
 * waits for it), with the longest event-loop stall seen while it ran.
 *
 *   npm run bench:metrics
 *   BENCH_ENDPOINTS=20000 BENCH_ROUNDS=50 npm run bench:metrics
 *   BENCH_DATABASE_URL=postgres://user@127.0.0.1:5432/bench npm run bench:metrics   (an empty database)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Insertable } from 'kysely';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { newId } from '../src/domain/ids.js';
import { openDatabase } from '../src/store/database.js';
import type { EndpointStorageTable, EndpointsTable, EndpointTagsTable } from '../src/store/schema.js';

const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const TRIGGERS = 50;
const EXECUTIONS = 20_000;
const BATCH = 1000;
const DATABASE_URL = process.env.BENCH_DATABASE_URL;
const TOKEN = 'AT:bench-admin-token-000000000';

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(1));

/** Deterministic pseudo-random numbers, so every run measures the same data. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** The fleet, written through a second handle on the service's database, BATCH rows per insert. */
async function fill(dataDir: string, accountId: string, serviceIds: string[], triggerIds: string[]): Promise<void> {
  const database = openDatabase({ dataDir, databaseUrl: DATABASE_URL });
  const { db } = database;
  const next = random(42);
  const now = Date.now();
  try {
    for (let start = 0; start < ENDPOINTS; start += BATCH) {
      const endpoints: Array<Insertable<EndpointsTable>> = [];
      const tags: Array<Insertable<EndpointTagsTable>> = [];
      const storage: Array<Insertable<EndpointStorageTable>> = [];
      for (let i = start; i < Math.min(start + BATCH, ENDPOINTS); i++) {
        const id = newId();
        const site = `site-${i % 40}`;
        const seen = next() < 0.9 ? now - Math.floor(next() * 86_400_000) : null;
        endpoints.push({
          id,
          account_id: accountId,
          service_id: serviceIds[i % serviceIds.length]!,
          key: `device-${String(i).padStart(7, '0')}`,
          tags: JSON.stringify([`site:${site}`, ...(i % 3 === 0 ? ['battery'] : [])]),
          status_details: JSON.stringify({ firmwareVersion: `1.${i % 7}.0`, battery: Math.floor(next() * 100), ...(i % 5 === 0 ? { signal: -70 - (i % 30) } : {}), ...(i % 11 === 0 ? { [`vendor${i % 13}`]: true } : {}) }),
          parameters: JSON.stringify({ interval: 60 * (1 + (i % 4)), ...(i % 2 === 0 ? { mode: 'eco' } : {}) }),
          trace: 0,
          created_at: now - 86_400_000,
          updated_at: now - 86_400_000,
          state: seen !== null && next() < 0.78 ? 'connected' : 'unavailable',
          last_seen_at: seen,
          missing_after: null,
        });
        tags.push({ endpoint_id: id, account_id: accountId, name: 'site', value: site });
        if (i % 3 === 0) tags.push({ endpoint_id: id, account_id: accountId, name: 'battery', value: '' });
        if (i % 100 === 0) storage.push({ endpoint_id: id, name: 'calibration', value: JSON.stringify({ offset: i % 9 }), updated_at: now });
      }
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('endpoints').values(endpoints).execute();
        await trx.insertInto('endpoint_tags').values(tags).execute();
        if (storage.length > 0) await trx.insertInto('endpoint_storage').values(storage).execute();
      });
    }
    for (let start = 0; start < EXECUTIONS; start += BATCH) {
      const rows = [];
      for (let i = start; i < Math.min(start + BATCH, EXECUTIONS); i++) {
        rows.push({
          id: newId(),
          account_id: accountId,
          trigger_id: triggerIds[i % triggerIds.length]!,
          event_id: newId(),
          event_type: 'tick',
          // In time order, as the service records them.
          started_at: now - 86_400_000 + Math.floor((i / EXECUTIONS) * 86_400_000),
          duration_ms: 1,
          status: i % 17 === 0 ? 'failed' : 'success',
          error: i % 17 === 0 ? 'broken' : null,
          line: null,
          logs: '[]',
          test: 0,
          context: '{}',
          groups: '[]',
        });
      }
      await db.insertInto('executions').values(rows).execute();
    }
  } finally {
    await database.close();
  }
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-metrics-'));
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: -1, mqttPort: 0, httpHost: '127.0.0.1', dataDir, databaseUrl: DATABASE_URL, adminToken: TOKEN, metricsFieldsMaxAgeSeconds: 3600 }),
    pino({ level: process.env.BENCH_LOG ?? 'warn' }),
  );
  const started = await bridge.start();
  try {
    const { domain } = bridge;
    const scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(TOKEN));
    const services = await Promise.all(['lwm2m', 'mqtt', 'udp'].map((type) => domain.services.create(scope, { name: `fleet-${type}`, type: type as 'lwm2m' })));
    const triggers = [];
    for (let i = 0; i < TRIGGERS; i++) {
      triggers.push(await domain.triggers.create(scope, { name: `trigger-${i}`, events: ['tick'], script: 'log(1);', globals: { limit: { value: i, protected: false } } }));
    }
    const filling = performance.now();
    await fill(
      dataDir,
      scope.accountId,
      services.map((service) => service.id),
      triggers.map((trigger) => trigger.id),
    );
    console.error(`wrote ${ENDPOINTS.toLocaleString('en-US')} endpoints and ${EXECUTIONS.toLocaleString('en-US')} executions in ${((performance.now() - filling) / 1000).toFixed(1)} s`);

    const base = `http://127.0.0.1:${started.ports.http}`;
    const call = async (url: string, token: string | null = TOKEN): Promise<number> => {
      const begun = performance.now();
      const response = await fetch(base + url, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
      return performance.now() - begun;
    };

    // One census: the account's first /metrics/fields call waits for it. The event loop's longest stall meanwhile.
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const census = await call('/metrics/fields');
    delay.disable();
    const fields = (await (await fetch(`${base}/metrics/fields`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { items: unknown[] };

    const routes: Array<[string, string | null]> = [
      ['/health', null],
      ['/metrics/status?object=endpoint&sort=-lastActivity&limit=100', TOKEN],
      ['/metrics/status', TOKEN],
      ['/metrics/status?sort=lastActivity', TOKEN],
      ['/metrics/status?sort=name', TOKEN],
      ['/metrics/status?object=service', TOKEN],
      ['/metrics/status?object=trigger', TOKEN],
      ['/metrics/status?resolve=true', TOKEN],
      ['/metrics/status?limit=1000', TOKEN],
      ['/metrics/distribution?field=state', TOKEN],
      ['/metrics/distribution?field=statusDetails.firmwareVersion', TOKEN],
      ['/metrics/fields', TOKEN],
    ];
    const times = new Map<string, number[]>(routes.map(([url]) => [url, []]));
    for (const [url, token] of routes) for (let i = 0; i < 2; i++) await call(url, token);
    // Rounds interleave the routes, so a slow moment of the machine falls on all of them alike.
    for (let round = 0; round < ROUNDS; round++) for (const [url, token] of routes) times.get(url)!.push(await call(url, token));

    const reference = percentile(times.get('/health')!, 0.5);
    const dialect = DATABASE_URL ? 'PostgreSQL' : 'SQLite';
    console.log(
      `# IoT Bridge metrics: ${cpus().length} cores, Node ${process.version}, ${dialect}, one account of ${ENDPOINTS.toLocaleString('en-US')} endpoints ` +
        `(3 services), ${TRIGGERS} triggers, ${EXECUTIONS.toLocaleString('en-US')} executions; median and p90 of ${ROUNDS} sequential calls over HTTP\n`,
    );
    console.log('| call | median ms | p90 ms | × reference |');
    console.log('|---|---|---|---|');
    for (const [url] of routes) {
      const values = times.get(url)!;
      const label = url === '/health' ? '`GET /health` (reference: unauthenticated, constant answer)' : url === '/metrics/fields' ? '`/metrics/fields` (from the census cache)' : `\`${url}\``;
      console.log(`| ${label} | ${ms(percentile(values, 0.5))} | ${ms(percentile(values, 0.9))} | ${(percentile(values, 0.5) / reference).toFixed(1)} |`);
    }
    console.log(
      `\nOne census of the account (the first \`/metrics/fields\` call, which waits for it): ${ms(census)} ms, ${fields.items.length} fields; ` +
        `longest event-loop stall meanwhile ${ms(delay.max / 1e6)} ms (pages of 1,000 rows, a turn between pages).`,
    );
  } finally {
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
