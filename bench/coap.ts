/**
 * CoAP benchmark: the real service against the CoAP server a user would run instead, side by side in one run.
 *
 *   - IoT Bridge: the service as `npm start` runs it (dist/src/cli.js, SQLite), in a process of its own, with a
 *     `coap` service and one endpoint per socket; each device sends CON POST `/d/<key>/t` (payload "22.5"),
 *     answered 2.04 once its `coap-request` event is durable.
 *   - Reference: libcoap's `coap-server-notls` (Debian libcoap3-bin, installed by the bench when missing and
 *     run as root), started fresh on a free loopback port, answering CON GET of one of its built-in resources
 *     (`/time` by default: a short text, piggy-backed 2.05).
 *
 * Both are driven by the same load generator in its own process (bench/coap-load.mjs: raw dgram clients,
 * SOCKETS sockets × IN_FLIGHT confirmable requests outstanding, identical retransmission after
 * BENCH_COAP_RETRANSMIT_MS), rounds alternating between them; only 2.xx answers count, 4.29 (the service's
 * per-peer rate limit) and other codes are reported beside. Each figure is the median of the rounds.
 *
 * Secondary (BENCH_COAP_SECONDARY=0 leaves it out): the message layer alone, as this bench measured before,
 * CON GET /temperature on one socket with BENCH_WINDOW in flight, answered by CoapEndpoint (src/coap, a
 * handler answering at once) and by a bare dgram + coap-packet responder, both in this process.
 *
 *   npm run bench:coap
 *   BENCH_DURATION=10 BENCH_ROUNDS=5 npm run bench:coap
 *   BENCH_DURATION=2 BENCH_ROUNDS=1 BENCH_COAP_SECONDARY=0 npm run bench:coap        # a quick check
 *
 * Knobs: BENCH_DURATION (s per round, default 5), BENCH_ROUNDS (3), BENCH_WINDOW (secondary rows' requests
 * in flight on their one socket, 64), BENCH_COAP_SOCKETS (100), BENCH_COAP_IN_FLIGHT (2 per socket),
 * BENCH_COAP_REFERENCE_PATH (libcoap resource, /time), BENCH_COAP_RETRANSMIT_MS (500),
 * BENCH_COAP_SECONDARY (1), BENCH_COAP_PEER_RATE (the service's IOTBRIDGE_COAP_PEER_RATE, 0 = off), BENCH_TIMEOUT (s before the whole bench gives up; from the settings).
 */
import dgram from 'node:dgram';
import { rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import { generate, parse } from 'coap-packet';
import { CoapEndpoint, ResponseCode } from '../src/coap/index.js';
import { startLibcoap, type Libcoap } from './reference/libcoap.js';
import { REPO_ROOT, startBridge, startChild, temporaryDirectory, watchdog, within, type Child } from './reference/processes.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 64);
const SOCKETS = Number(process.env.BENCH_COAP_SOCKETS ?? 100);
const IN_FLIGHT = Number(process.env.BENCH_COAP_IN_FLIGHT ?? 2);
const REFERENCE_PATH = process.env.BENCH_COAP_REFERENCE_PATH ?? '/time';
const RETRANSMIT_MS = Number(process.env.BENCH_COAP_RETRANSMIT_MS ?? 500);
const SECONDARY = process.env.BENCH_COAP_SECONDARY !== '0';
/**
 * Each socket here sends as fast as it is answered, far above what one device sends; the service's per-device
 * limit (IOTBRIDGE_COAP_PEER_RATE, 100/s by default) would measure itself. Off unless BENCH_COAP_PEER_RATE says.
 */
const PEER_RATE = process.env.BENCH_COAP_PEER_RATE ?? '0';
/** Unmeasured round against each primary server first (JIT, caches); the generator warms up 1 s in every round besides. */
const WARMUP = 2;
const TIMEOUT = Number(process.env.BENCH_TIMEOUT ?? 300 + (ROUNDS + 1) * (SECONDARY ? 4 : 2) * (DURATION + 5));
const TOKEN = 'AT:bench-admin-token-000000000';
const PAYLOAD = Buffer.from('22.5 C');
const LOAD = path.join(REPO_ROOT, 'bench/coap-load.mjs');

/** What bench/coap-load.mjs reports for one run. */
interface LoadResult {
  readonly ok: number;
  readonly refused: number;
  readonly errors: number;
  readonly reset: number;
  readonly lost: number;
  readonly retransmitted: number;
  readonly separate: number;
  readonly okTotal: number;
  readonly codes: Record<string, number>;
  readonly p50: number | null;
  readonly p99: number | null;
  readonly seconds: number;
}

interface LoadSettings {
  readonly port: number;
  readonly duration: number;
  readonly sockets: number;
  readonly inFlight: number;
  readonly method: 'GET' | 'POST';
  readonly paths: readonly string[];
  readonly payload?: string;
}

async function load(settings: LoadSettings): Promise<LoadResult> {
  let result: LoadResult | undefined;
  const child = startChild('the load generator', process.execPath, [LOAD, JSON.stringify({ retransmitMs: RETRANSMIT_MS, ...settings })], {
    onLine: (line) => {
      if (line.startsWith('{')) result = JSON.parse(line) as LoadResult;
    },
  });
  try {
    const code = await within('the load generator', (settings.duration + 30) * 1000, child.exited);
    if (code !== 0 || !result) throw new Error(`the load generator exited with ${String(code)}:\n${child.tail()}`);
    return result;
  } finally {
    await child.stop();
  }
}

interface Server {
  readonly port: number;
  close(): Promise<void>;
}

async function bareServer(): Promise<Server> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    try {
      const request = parse(msg);
      const response = generate({ code: '2.05', messageId: request.messageId, token: request.token, ack: true, payload: PAYLOAD });
      socket.send(response, rinfo.port, rinfo.address);
    } catch {
      // garbage: dropped
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, close: () => new Promise((resolve) => socket.close(() => resolve())) };
}

async function endpointServer(): Promise<Server> {
  // Rate limiting stays on (with a limit the load never reaches) so its cost is measured too.
  const endpoint = new CoapEndpoint({ host: '127.0.0.1', rateLimit: { rate: 1e9, burst: 1e9 } });
  endpoint.onRequest(() => ({ code: ResponseCode.Content, payload: PAYLOAD }));
  await endpoint.start();
  return { port: endpoint.address().port, close: () => endpoint.stop() };
}

/** Secondary rows: one socket, WINDOW in flight, CON GET /temperature, against a server in this process. */
async function secondary(start: () => Promise<Server>): Promise<LoadResult> {
  const server = await start();
  try {
    return await load({ port: server.port, duration: DURATION, sockets: 1, inFlight: WINDOW, method: 'GET', paths: ['/temperature'] });
  } finally {
    await server.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rate = (r: LoadResult) => r.ok / r.seconds;
const k = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number | null) => (n === null ? '–' : n.toFixed(1));

/** Median answered/s and latency of some runs, and what else happened in them. */
function summary(results: LoadResult[]): { rps: number; p50: number | null; p99: number | null; notes: string } {
  const sum = (pick: (r: LoadResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  const seconds = sum((r) => r.seconds);
  const notes = [
    sum((r) => r.refused) > 0 ? `4.29 refused ${k(sum((r) => r.refused) / seconds)}/s` : '',
    sum((r) => r.errors) > 0 ? `other codes ${k(sum((r) => r.errors) / seconds)}/s (${[...new Set(results.flatMap((r) => Object.keys(r.codes)))].filter((c) => !c.startsWith('2.')).join(', ')})` : '',
    sum((r) => r.reset) > 0 ? `RST ${k(sum((r) => r.reset))}` : '',
    sum((r) => r.lost) > 0 ? `lost ${k(sum((r) => r.lost))}` : '',
    sum((r) => r.retransmitted) > 0 ? `retransmitted ${k(sum((r) => r.retransmitted))}` : '',
    sum((r) => r.separate) > 0 ? `separate responses ${k(sum((r) => r.separate))}` : '',
  ].filter(Boolean);
  const latencies = results.filter((r) => r.p50 !== null);
  return {
    rps: median(results.map(rate)),
    p50: latencies.length > 0 ? median(latencies.map((r) => r.p50!)) : null,
    p99: latencies.length > 0 ? median(latencies.map((r) => r.p99!)) : null,
    notes: notes.length > 0 ? notes.join('; ') : 'none',
  };
}

async function api(base: string, method: string, url: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
  return (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>;
}

async function main(): Promise<void> {
  watchdog(TIMEOUT, 'bench:coap');
  console.log(
    `# IoT Bridge CoAP benchmark: ${cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${DURATION} s (after 1 s of warm-up each), ` +
      `${SOCKETS} sockets × ${IN_FLIGHT} CON requests in flight, load generator in its own process; ` +
      `the service's per-device rate limit IOTBRIDGE_COAP_PEER_RATE=${PEER_RATE} (0: off; its default, 100/s, would cap ${SOCKETS} sockets near ${SOCKETS * 100}/s)\n`,
  );
  const dataDir = await temporaryDirectory('iotbridge-bench-coap-');
  let libcoap: Libcoap | undefined;
  let bridge: Child | undefined;
  try {
    libcoap = await startLibcoap(REFERENCE_PATH);
    const started = await startBridge({ IOTBRIDGE_DATA_DIR: dataDir, IOTBRIDGE_ADMIN_TOKEN: TOKEN, IOTBRIDGE_COAP_PEER_RATE: PEER_RATE });
    bridge = started.child;
    const base = `http://127.0.0.1:${started.ports.http!}`;
    const serviceId = (await api(base, 'POST', '/services', { name: 'bench-coap', type: 'coap' })).id as string;
    const keys = Array.from({ length: SOCKETS }, (_, i) => `bench-${i}`);
    for (let i = 0; i < SOCKETS; i += 20) await Promise.all(keys.slice(i, i + 20).map((key) => api(base, 'POST', '/endpoints', { key, serviceId })));
    const since = new Date(Date.now() - 1000).toISOString();

    const reference: LoadSettings = { port: libcoap.port, duration: DURATION, sockets: SOCKETS, inFlight: IN_FLIGHT, method: 'GET', paths: [REFERENCE_PATH] };
    const service: LoadSettings = { port: started.ports.coap!, duration: DURATION, sockets: SOCKETS, inFlight: IN_FLIGHT, method: 'POST', paths: keys.map((key) => `/d/${key}/t`), payload: '22.5' };
    await load({ ...reference, duration: WARMUP });
    let stored = (await load({ ...service, duration: WARMUP })).okTotal;
    const refRuns: LoadResult[] = [];
    const ourRuns: LoadResult[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      refRuns.push(await load(reference));
      ourRuns.push(await load(service));
      stored += ourRuns.at(-1)!.okTotal;
      console.log(`round ${round + 1}: libcoap ${k(rate(refRuns.at(-1)!))}/s, IoT Bridge ${k(rate(ourRuns.at(-1)!))}/s`);
    }

    const bareRuns: LoadResult[] = [];
    const endpointRuns: LoadResult[] = [];
    if (SECONDARY) {
      for (let round = 0; round < ROUNDS; round++) {
        bareRuns.push(await secondary(bareServer));
        endpointRuns.push(await secondary(endpointServer));
        console.log(`secondary round ${round + 1}: bare dgram ${k(rate(bareRuns.at(-1)!))}/s, CoapEndpoint ${k(rate(endpointRuns.at(-1)!))}/s`);
      }
    }

    // Every 2.04 the devices got is an event in the history (some more if an answer was lost on the way back).
    const counted = await api(base, 'GET', `/history/counts?type=coap-request&from=${encodeURIComponent(since)}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}&interval=86400`);
    const events = counted.total as number;

    const ref = summary(refRuns);
    const ours = summary(ourRuns);
    console.log(`\n| ${SOCKETS} sockets × ${IN_FLIGHT} in flight, median of ${ROUNDS} | answered 2.xx/s | p50 / p99 ms | ratio to reference (issue 23 target ≥ 0.25) | other answers |`);
    console.log('|---|---|---|---|---|');
    console.log(`| reference: ${libcoap.version}, CON GET ${REFERENCE_PATH} → 2.05 | ${k(ref.rps)} | ${ms(ref.p50)} / ${ms(ref.p99)} | 1.00 | ${ref.notes} |`);
    console.log(`| IoT Bridge: CON POST /d/<key>/t → durable coap-request event, 2.04 | ${k(ours.rps)} | ${ms(ours.p50)} / ${ms(ours.p99)} | ${(ours.rps / ref.rps).toFixed(2)} | ${ours.notes} |`);
    if (SECONDARY) {
      const bare = summary(bareRuns);
      const layer = summary(endpointRuns);
      console.log(`\n| secondary: message layer only, 1 socket × ${WINDOW} in flight, CON GET, server in the bench's process | answered 2.xx/s | p50 / p99 ms | ratio to bare | other answers |`);
      console.log('|---|---|---|---|---|');
      console.log(`| bare dgram + coap-packet responder | ${k(bare.rps)} | ${ms(bare.p50)} / ${ms(bare.p99)} | 1.00 | ${bare.notes} |`);
      console.log(`| CoapEndpoint (src/coap), handler answering at once | ${k(layer.rps)} | ${ms(layer.p50)} / ${ms(layer.p99)} | ${(layer.rps / bare.rps).toFixed(2)} | ${layer.notes} |`);
    }
    // A run stops with requests in flight: the service may store those without the device seeing the 2.04.
    const unanswered = (ROUNDS + 1) * SOCKETS * IN_FLIGHT + ourRuns.reduce((total, r) => total + r.lost, 0);
    console.log(`\ncoap-request events stored: ${k(events)}; 2.04 answers received: ${k(stored)} (stored may exceed them by the ${k(unanswered)} requests in flight when each run stopped)`);
    if (events > stored + unanswered) console.log('!! more events stored than requests sent');
    if (events < stored) {
      console.log('!! fewer events stored than acknowledged');
      process.exitCode = 1;
    }
  } finally {
    await bridge?.stop();
    await libcoap?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
