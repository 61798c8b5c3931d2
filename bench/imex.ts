/**
 * Import of a large configuration (docs/imex.md): 100,000 endpoints imported through `POST /imex/import` into the
 * real service (a child process, as `npm start` runs it) against the same endpoints created through the API's own
 * bulk route (`POST /endpoints/bulk`, 1,000 per call, one call after another), in the same run, on embedded SQLite
 * and PostgreSQL. Memory: the service's resident set is sampled every 100 ms; the peak above the level before the
 * import is printed for a small and then the large document, to show it does not grow with the document (the
 * bulk route runs on a fresh service of its own). Then the export of what was imported, timed and sampled the same way.
 *
 *   npm run bench:imex
 *   BENCH_ENDPOINTS=20000 BENCH_DIALECTS=sqlite npm run bench:imex
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import pg from 'pg';
import { pino } from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';

const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 100_000);
const SMALL = Math.max(1000, Math.round(ENDPOINTS / 5));
const BULK_CALL = 1000;
const DIALECTS = (process.env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',').filter(Boolean);
const TOKEN = 'AT:bench-imex-admin-token-00000000';
const POSTGRES_URL = process.env.IOTBRIDGE_TEST_POSTGRES_URL ?? `postgres://${userInfo().username}@127.0.0.1:5432/test`;

interface Service {
  readonly child: ChildProcess;
  readonly base: string;
}

async function start(env: Record<string, string>): Promise<Service> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    env: { ...process.env, IOTBRIDGE_HTTP_PORT: '0', IOTBRIDGE_UDP_PORT: '0', IOTBRIDGE_TCP_PORT: '0', IOTBRIDGE_COAP_PORT: '0', IOTBRIDGE_COAPS_PORT: '0', IOTBRIDGE_MQTT_PORT: '0', IOTBRIDGE_HTTP_HOST: '127.0.0.1', IOTBRIDGE_ADMIN_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    // The ports are logged at info level; what follows is read and dropped so the pipe never fills.
    let out: string | undefined = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (out === undefined) return;
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.includes('"ports"'));
      if (line) {
        out = undefined;
        resolve((JSON.parse(line) as { ports: { http: number } }).ports.http);
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

async function call(service: Service, method: string, url: string, body?: string | object): Promise<Record<string, unknown>> {
  const response = await fetch(service.base + url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  if (!response.ok && response.status !== 202) throw new Error(`${method} ${url}: ${response.status} ${(await response.text()).slice(0, 300)}`);
  return (await response.json()) as Record<string, unknown>;
}

/**
 * The child's anonymous resident memory (MiB), from /proc: the heap and SQLite's page cache, without the database
 * file's pages mapped by SQLite's mmap (which grow with the database, not with what the import holds).
 */
async function rssMiB(child: ChildProcess): Promise<number> {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
  return Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

/** The service's V8 heap in use (MiB, live objects and garbage not yet collected), from its Prometheus metrics. */
async function heapUsedMiB(service: Service): Promise<number> {
  const response = await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const text = await response.text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? 0) / 2 ** 20;
}

interface Measured {
  readonly seconds: number;
  readonly beforeMiB: number;
  readonly peakMiB: number;
  readonly heapPeakMiB: number;
}

/** Runs `work` while sampling the child's memory → seconds taken, the level before and the peaks. */
async function measured(service: Service, work: () => Promise<void>): Promise<Measured> {
  const before = await rssMiB(service.child);
  let peak = before;
  let heapPeak = 0;
  const timer = setInterval(() => void rssMiB(service.child).then((rss) => (peak = Math.max(peak, rss))), 100);
  const heapTimer = setInterval(() => void heapUsedMiB(service).then((heap) => (heapPeak = Math.max(heapPeak, heap)), () => undefined), 250);
  const started = performance.now();
  try {
    await work();
  } finally {
    clearInterval(timer);
    clearInterval(heapTimer);
  }
  return { seconds: (performance.now() - started) / 1000, beforeMiB: before, peakMiB: peak, heapPeakMiB: heapPeak };
}

function documentOf(count: number, prefix: string): string {
  const endpoints: string[] = [];
  for (let i = 0; i < count; i++) endpoints.push(JSON.stringify({ key: `${prefix}-${i}`, service: 'imported', tags: ['bench', `n:${i % 10}`], parameters: { n: i } }));
  return `{"format":"iotbridge-export","version":1,"services":[{"name":"imported","type":"mqtt"}],"endpoints":[\n${endpoints.join(',\n')}\n]}`;
}

async function importDocument(service: Service, document: string): Promise<void> {
  let job = await call(service, 'POST', '/imex/import', document);
  while (job.state === 'running') {
    await new Promise((resolve) => setTimeout(resolve, 250));
    job = await call(service, 'GET', `/imex/jobs/${String(job.jobId)}`);
  }
  if (job.state !== 'done' || job.refusedCount !== 0) throw new Error(`import ended ${String(job.state)}: ${JSON.stringify(job).slice(0, 500)}`);
}

/** A fresh service on its own data directory (and PostgreSQL database), stopped and removed after `work`. */
async function withService<T>(dialect: string, work: (service: Service) => Promise<T>): Promise<T> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-imex-'));
  const database = `iotbridge_bench_imex_${process.pid}`;
  const admin = dialect === 'postgres' ? new pg.Client({ connectionString: POSTGRES_URL }) : undefined;
  let env: Record<string, string> = { IOTBRIDGE_DATA_DIR: dataDir };
  if (admin) {
    await admin.connect();
    await admin.query(`create database ${database}`);
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${database}`;
    env = { ...env, IOTBRIDGE_DATABASE_URL: url.toString() };
  }
  const service = await start(env);
  try {
    return await work(service);
  } finally {
    service.child.kill('SIGTERM');
    await new Promise((resolve) => service.child.once('exit', resolve));
    await rm(dataDir, { recursive: true, force: true });
    if (admin) {
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    }
  }
}

async function benchDialect(name: string): Promise<void> {
  const perSecond = (seconds: number, count: number) => Math.round(count / seconds).toLocaleString('en');
  const small = documentOf(SMALL, 'small');
  const large = documentOf(ENDPOINTS, 'imex');
  let exportedBytes = 0;
  const [smallImport, largeImport, exported] = await withService(name, async (service) => {
    const smallImport = await measured(service, () => importDocument(service, small));
    const largeImport = await measured(service, () => importDocument(service, large));
    const exported = await measured(service, async () => {
      const response = await fetch(`${service.base}/imex/export`, { headers: { authorization: `Bearer ${TOKEN}` } });
      for await (const chunk of response.body!) exportedBytes += (chunk as Uint8Array).length;
    });
    return [smallImport, largeImport, exported];
  });
  // The reference on a fresh service of its own, so both start from an empty database.
  const bulk = await withService(name, async (service) => {
    const bulkService = (await call(service, 'POST', '/services', { name: 'bulk', type: 'mqtt' })).id as string;
    return measured(service, async () => {
      for (let i = 0; i < ENDPOINTS; i += BULK_CALL) {
        const items = Array.from({ length: Math.min(BULK_CALL, ENDPOINTS - i) }, (_, j) => ({ key: `bulk-${i + j}`, serviceId: bulkService, tags: ['bench', `n:${(i + j) % 10}`], parameters: { n: i + j } }));
        const answer = await call(service, 'POST', '/endpoints/bulk', { items });
        if (answer.failed !== 0) throw new Error(`bulk: ${String(answer.failed)} failed`);
      }
    });
  });
  console.log(
    `${name}: ${ENDPOINTS.toLocaleString('en')} endpoints — POST /imex/import ${largeImport.seconds.toFixed(1)} s (${perSecond(largeImport.seconds, ENDPOINTS)}/s, ` +
      `document ${(large.length / 2 ** 20).toFixed(1)} MiB); POST /endpoints/bulk ×${ENDPOINTS / BULK_CALL} ${bulk.seconds.toFixed(1)} s (${perSecond(bulk.seconds, ENDPOINTS)}/s); ` +
      `ratio import/bulk time ${(largeImport.seconds / bulk.seconds).toFixed(2)}`,
  );
  console.log(
    `${name}: service memory (anonymous RSS) ${smallImport.beforeMiB.toFixed(0)} MiB at the start; peak during the import of ${SMALL.toLocaleString('en')}: ${smallImport.peakMiB.toFixed(0)} MiB, ` +
      `of ${ENDPOINTS.toLocaleString('en')} after it: ${largeImport.peakMiB.toFixed(0)} MiB (V8 heap in use: peaks ${smallImport.heapPeakMiB.toFixed(0)} and ${largeImport.heapPeakMiB.toFixed(0)} MiB); bulk route (own service, ${bulk.beforeMiB.toFixed(0)} MiB at the start): peak ${bulk.peakMiB.toFixed(0)} MiB`,
  );
  console.log(
    `${name}: GET /imex/export of ${(ENDPOINTS + SMALL).toLocaleString('en')} endpoints ${exported.seconds.toFixed(1)} s (${perSecond(exported.seconds, ENDPOINTS + SMALL)}/s), ` +
      `${(exportedBytes / 2 ** 20).toFixed(1)} MiB, memory ${exported.beforeMiB.toFixed(0)} → peak ${exported.peakMiB.toFixed(0)} MiB`,
  );
}

/**
 * What an import keeps: the same imports in this process, with the heap measured after full collections (a peak
 * above says how much garbage V8 let pile up before collecting, not what the import holds on to).
 */
async function retainedHeap(): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heapMiB = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-imex-heap-'));
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: -1, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: TOKEN }),
    pino({ level: 'warn' }),
  );
  const started = await bridge.start();
  const service = { child: undefined as unknown as ChildProcess, base: `http://127.0.0.1:${started.ports.http}` };
  try {
    const levels = [heapMiB()];
    for (const [count, prefix] of [[SMALL, 'heap-small'], [ENDPOINTS, 'heap-large']] as const) {
      await importDocument(service, documentOf(count, prefix));
      levels.push(heapMiB());
    }
    const [start, small, large] = levels.map((level) => level.toFixed(1));
    console.log(`in-process heap after full GCs (SQLite): ${start} MiB at the start, ${small} MiB after importing ${SMALL.toLocaleString('en')}, ${large} MiB after ${ENDPOINTS.toLocaleString('en')} more`);
  } finally {
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

for (const dialect of DIALECTS) await benchDialect(dialect);
if (process.env.BENCH_RETAINED !== '0') await retainedHeap();
