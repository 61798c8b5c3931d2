/**
 * Event pipeline benchmark: events published on the bus → a trivial trigger finished (run in the sandbox,
 * execution recorded), on embedded SQLite. The reference, measured in the same run, is the same events
 * through the same bus with no trigger listening (persist + dispatch only). Median of several rounds.
 * It runs the compiled service (`tsc -p tsconfig.bench.json`, into dist/), as `npm start` does: under tsx
 * the service and its script workers also carry the development loader.
 *
 *   npm run bench:events
 *   BENCH_EVENTS=50000 BENCH_ROUNDS=5 npm run bench:events
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Scope } from '../src/domain/scope.js';
import { createEvent } from '../src/events/event.js';
import { childrenCpuSecondsOf } from './reference/processes.js';

/**
 * Events per saturated round: a round of about a second, so that the throughput is the pipeline's sustained
 * rate and not its filling and draining (with 3,000 a round lasted ~150 ms, and the script worker's CPU per
 * event came out nearly twice the sustained figure).
 */
const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
/**
 * Saturated rounds keep at most this many events unfinished (published, their trigger not yet done): the
 * pipeline never waits for work (it handles 50 endpoints at once), and what is measured is its sustained
 * rate and the latency of a bounded queue, not a backlog of a whole round (which the bus would keep in the
 * database past IOTBRIDGE_EVENT_BACKLOG_IN_MEMORY and read back).
 */
const WINDOW = Number(process.env.BENCH_EVENTS_WINDOW ?? 2000);
/** Events per paced latency round. */
const PACED_EVENTS = Number(process.env.BENCH_PACED_EVENTS ?? 3000);
/** Offered rate of the latency rounds: well under saturation, so latency is the pipeline's, not a queue's. */
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ENDPOINTS = 100;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!;

interface Figure {
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
}

/**
 * CPU seconds used so far by this process (the service) and by its script workers (its child processes
 * running worker.ts; Linux /proc, clock ticks of 10 ms; undefined elsewhere).
 */
function cpuSeconds(): { service: number; workers: number | undefined } {
  const usage = process.cpuUsage();
  return { service: (usage.user + usage.system) / 1e6, workers: childrenCpuSecondsOf(process.pid, 'worker') };
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-events-'));
  const published = new Map<string, number>();
  const latencies: number[] = [];
  let done = 0;
  /** How many events the round under way waits for. */
  let expected = EVENTS;
  let onDone: () => void = () => undefined;
  /** Called as events finish while the load generator waits for room in the window. */
  let onFinished: (() => void) | undefined;
  const bridge = new IotBridge(loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: 'AT:bench-admin-token-000000000' }), pino({ level: 'warn' }), {
    // Subscribed after the trigger engine: it sees an event once the triggers for it have finished.
    beforeBusStart: (bus) =>
      bus.subscribe(async (event) => {
        const start = published.get(event.id);
        if (start === undefined) return;
        latencies.push(performance.now() - start);
        if (++done === expected) onDone();
        onFinished?.();
      }),
  });
  await bridge.start();
  try {
    const { domain } = bridge;
    const principal = await domain.tokens.authenticate('AT:bench-admin-token-000000000');
    const scope: Scope = await domain.accounts.scopeFor(principal);
    const service = await domain.services.create(scope, { name: 'bench', type: 'udp' });
    const endpoints: { id: string; key: string }[] = [];
    for (let i = 0; i < ENDPOINTS; i++) endpoints.push(await domain.endpoints.create(scope, { key: `dev-${i}`, serviceId: service.id }));
    const trigger = await domain.triggers.create(scope, { name: 'trivial', events: ['reading'], script: 'var doubled = event.data.n * 2;', enabled: false });

    // What a device server publishes: the endpoint is known, no look-up per event.
    const reading = (endpoint: { id: string; key: string }, n: number) =>
      createEvent({ type: 'reading', accountId: scope.accountId, serviceId: service.id, endpointId: endpoint.id, endpointKey: endpoint.key, data: { n } });

    const round = async (): Promise<Figure> => {
      published.clear();
      latencies.length = 0;
      done = 0;
      expected = EVENTS;
      const finished = new Promise<void>((resolve) => (onDone = resolve));
      const started = performance.now();
      // Offered as fast as the pipeline finishes them, spread over the endpoints, in batches the size a busy server sees.
      for (let i = 0; i < EVENTS; i += 100) {
        if (i - done > WINDOW) {
          await new Promise<void>((resolve) => {
            onFinished = () => {
              if (i - done > WINDOW / 2) return;
              onFinished = undefined;
              resolve();
            };
          });
        }
        await Promise.all(
          Array.from({ length: Math.min(100, EVENTS - i) }, async (_, j) => {
            const endpoint = endpoints[(i + j) % ENDPOINTS]!;
            const t = performance.now();
            const event = reading(endpoint, i + j);
            published.set(event.id, t);
            await bridge.bus.publish([event]);
          }),
        );
      }
      await finished;
      const seconds = (performance.now() - started) / 1000;
      return { perSecond: EVENTS / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    };

    /** `PACED_EVENTS` events offered at `RATE` per second (10 ms ticks); resolves with the latency figure. */
    const paced = async (): Promise<Figure> => {
      published.clear();
      latencies.length = 0;
      done = 0;
      expected = PACED_EVENTS;
      const finished = new Promise<void>((resolve) => (onDone = resolve));
      const perTick = Math.max(1, Math.round(RATE / 100));
      let sent = 0;
      const started = performance.now();
      while (sent < PACED_EVENTS) {
        const batch = Math.min(perTick, PACED_EVENTS - sent);
        for (let j = 0; j < batch; j++, sent++) {
          const endpoint = endpoints[sent % ENDPOINTS]!;
          const event = reading(endpoint, sent);
          published.set(event.id, performance.now());
          void bridge.bus.publish([event]);
        }
        const next = started + (sent / RATE) * 1000;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
      }
      await finished;
      return { perSecond: RATE, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    };

    /** CPU µs per event of the measured rounds: the service's and the script workers'. */
    let cpu = { service: 0, workers: undefined as number | undefined };
    const measure = async (): Promise<Figure> => {
      await round(); // warm-up
      const figures: Figure[] = [];
      const before = cpuSeconds();
      for (let r = 0; r < ROUNDS; r++) figures.push(await round());
      const after = cpuSeconds();
      const perEvent = (seconds: number) => (seconds * 1e6) / (EVENTS * ROUNDS);
      cpu = { service: perEvent(after.service - before.service), workers: after.workers === undefined ? undefined : perEvent(after.workers - (before.workers ?? 0)) };
      return { perSecond: median(figures.map((f) => f.perSecond)), p50: median(figures.map((f) => f.p50)), p99: median(figures.map((f) => f.p99)) };
    };

    const reference = await measure();
    const referenceCpu = cpu;
    const referenceLatency = await paced();
    await domain.triggers.replace(scope, trigger.id, { ...trigger, enabled: true });
    const withTrigger = await measure();
    const withTriggerCpu = cpu;
    const withTriggerLatency = await paced();
    const executions = await domain.executions.list(scope, { triggerId: trigger.id, status: 'failed' }, { limit: 1, offset: 0 });
    if (executions.total > 0) throw new Error(`the trivial trigger failed: ${executions.items[0]?.error}`);

    const fmt = (f: Figure) => `${Math.round(f.perSecond).toLocaleString('en-US')} events/s (p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms)`;
    console.log(`# IoT Bridge event pipeline: ${cpus().length} cores, Node ${process.version}, SQLite, ${EVENTS} events × ${ROUNDS} rounds with at most ${WINDOW} unfinished (latency: ${PACED_EVENTS} at ${RATE}/s), ${ENDPOINTS} endpoints\n`);
    const lat = (f: Figure) => `p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms`;
    console.log(`| pipeline | throughput, saturated (median) | ratio to reference | latency at ${RATE} events/s |`);
    console.log('|---|---|---|---|');
    console.log(`| bus only: persist + dispatch, no trigger (reference) | ${fmt(reference)} | 1.00 | ${lat(referenceLatency)} |`);
    console.log(`| + trivial trigger in the sandbox, execution recorded | ${fmt(withTrigger)} | ${(withTrigger.perSecond / reference.perSecond).toFixed(2)} | ${lat(withTriggerLatency)} |`);
    if (withTriggerCpu.workers !== undefined) {
      // The load generator runs in the service's process: its share is in the service's figure of both rows.
      const total = withTriggerCpu.service + withTriggerCpu.workers;
      console.log(
        `\nCPU per event in the saturated rounds: bus only ${referenceCpu.service.toFixed(1)} µs (service, load generator included); ` +
          `with the trigger ${withTriggerCpu.service.toFixed(1)} µs service + ${withTriggerCpu.workers.toFixed(1)} µs script worker = ${total.toFixed(1)} µs, ` +
          `i.e. ${Math.round(1e6 / total).toLocaleString('en-US')} events/s per core busy.`,
      );
    }
  } finally {
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
