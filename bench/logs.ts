/**
 * Account logs on the hot path: events/s through a trigger that logs one line per run (each line an account
 * log entry, buffered and written in multi-row inserts) against the same trigger not logging, in one run on
 * embedded SQLite, rounds of the two alternating, medians of 3; prints the ratio. Then a search of the log
 * the runs wrote (newest page, and a text that matches nothing, which walks all of it).
 *
 *   npm run bench:logs
 *   BENCH_EVENTS=50000 BENCH_ROUNDS=5 npm run bench:logs
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Scope } from '../src/domain/scope.js';
import { createEvent } from '../src/events/event.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
/** Events published but not yet handled at most: the pipeline's sustained rate, not a backlog's. */
const WINDOW = Number(process.env.BENCH_EVENTS_WINDOW ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ENDPOINTS = 100;
const TOKEN = 'AT:bench-logs-admin-token-0000000';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-logs-'));
  let done = 0;
  let onFinished: (() => void) | undefined;
  const bridge = new IotBridge(loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: TOKEN }), pino({ level: 'warn' }), {
    // Subscribed after the trigger engine: an event counts once its triggers have run.
    beforeBusStart: (bus) =>
      bus.subscribe(async () => {
        done++;
        onFinished?.();
      }),
  });
  await bridge.start();
  try {
    const { domain } = bridge;
    const scope: Scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(TOKEN));
    const service = await domain.services.create(scope, { name: 'bench', type: 'udp' });
    const endpoints: { id: string; key: string }[] = [];
    for (let i = 0; i < ENDPOINTS; i++) endpoints.push(await domain.endpoints.create(scope, { key: `dev-${i}`, serviceId: service.id }));
    const quiet = await domain.triggers.create(scope, { name: 'quiet', events: ['reading'], script: 'var doubled = event.data.n * 2;', enabled: false });
    const logging = await domain.triggers.create(scope, { name: 'logging', events: ['reading'], script: "var doubled = event.data.n * 2; log('reading', event.data.n, 'doubled', doubled);", enabled: false });
    const use = async (enabled: typeof quiet) => {
      for (const trigger of [quiet, logging]) await domain.triggers.replace(scope, trigger.id, { ...trigger, enabled: trigger === enabled });
    };

    /** Resolves once `holds()` is true, checked as events finish. */
    const once = (holds: () => boolean) =>
      new Promise<void>((resolve) => {
        onFinished = () => {
          if (!holds()) return;
          onFinished = undefined;
          resolve();
        };
      });

    /** One saturated round: EVENTS events offered as fast as the pipeline finishes them; events/s. */
    const round = async (): Promise<number> => {
      done = 0;
      const started = performance.now();
      for (let i = 0; i < EVENTS; i += 100) {
        if (i - done > WINDOW) await once(() => i - done <= WINDOW / 2);
        const batch = Array.from({ length: Math.min(100, EVENTS - i) }, (_, j) => {
          const endpoint = endpoints[(i + j) % ENDPOINTS]!;
          return createEvent({ type: 'reading', accountId: scope.accountId, serviceId: service.id, endpointId: endpoint.id, endpointKey: endpoint.key, data: { n: i + j } });
        });
        await bridge.bus.publish(batch);
      }
      if (done < EVENTS) await once(() => done >= EVENTS);
      return EVENTS / ((performance.now() - started) / 1000);
    };

    // The third arm tells the account log's share from the script's own `log()` (sandbox, execution record):
    // the same logging trigger with the lines kept from the account log.
    const scriptRun = domain.logs.scriptRun.bind(domain.logs);
    const arms = [
      ['quiet', quiet, true],
      ['logging', logging, true],
      ['recordOnly', logging, false],
    ] as const;
    const figures = { quiet: [] as number[], logging: [] as number[], recordOnly: [] as number[] };
    const setUp = async (trigger: typeof quiet, accountLog: boolean) => {
      await use(trigger);
      domain.logs.scriptRun = accountLog ? scriptRun : () => undefined;
    };
    for (const [, trigger, accountLog] of arms) {
      await setUp(trigger, accountLog);
      await round(); // warm-up: compiled script, caches
    }
    // Alternating, so that drift (page cache, WAL size, a busy machine) falls on every arm alike.
    for (let r = 0; r < ROUNDS; r++) {
      for (const [arm, trigger, accountLog] of arms) {
        await setUp(trigger, accountLog);
        figures[arm].push(await round());
      }
    }
    domain.logs.scriptRun = scriptRun;
    await domain.logs.flush();
    const failed = await domain.executions.list(scope, { status: 'failed' }, { limit: 1, offset: 0 });
    if (failed.total > 0) throw new Error(`a trigger failed: ${failed.items[0]?.error}`);

    const { written, dropped } = domain.logs.stats;
    const expected = EVENTS * (ROUNDS + 1);
    const newest = performance.now();
    const page = await domain.logs.search(scope, { sources: ['script'] }, { limit: 100, timeoutMs: 10_000 });
    const newestMs = performance.now() - newest;
    const walk = performance.now();
    const none = await domain.logs.search(scope, { text: 'matches-nothing' }, { limit: 100, timeoutMs: 60_000 });
    const walkMs = performance.now() - walk;

    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const quietRate = median(figures.quiet);
    const loggingRate = median(figures.logging);
    console.log(`# IoT Bridge account logs on the trigger hot path: ${cpus().length} cores, Node ${process.version}, SQLite, ${EVENTS} events × ${ROUNDS} rounds per arm, alternating, ${ENDPOINTS} endpoints\n`);
    console.log('| trigger | events/s (median) | rounds | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| not logging | ${fmt(quietRate)} | ${figures.quiet.map(fmt).join(', ')} | 1.00 |`);
    console.log(`| logging one line per run (one log entry each) | ${fmt(loggingRate)} | ${figures.logging.map(fmt).join(', ')} | ${(loggingRate / quietRate).toFixed(2)} |`);
    const recordOnly = median(figures.recordOnly);
    console.log(`| logging one line, kept from the account log (execution record only) | ${fmt(recordOnly)} | ${figures.recordOnly.map(fmt).join(', ')} | ${(recordOnly / quietRate).toFixed(2)} |`);
    console.log(`\nThe account log's own cost: ${(loggingRate / recordOnly).toFixed(2)} of the rate with the line in the execution record only.`);
    console.log(`\nlog entries written ${fmt(written)} (expected ${fmt(expected)}), dropped ${fmt(dropped)}`);
    console.log(`search: newest 100 script entries ${newestMs.toFixed(1)} ms (${page.items.length} found); a text matching nothing over all ${fmt(written)} entries ${walkMs.toFixed(0)} ms (partial: ${none.partial})`);
  } finally {
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
