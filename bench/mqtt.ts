/**
 * MQTT benchmark: N devices (mqtt.js, MQTT 3.1.1, each logged in with its endpoint key and password) publish
 * QoS 1 messages into their topic space of an MQTT service of the real service, run in a process of its own
 * (bench/mqtt-service.ts) as Mosquitto runs in its own, while the devices share this one (the load generator:
 * bench/mqtt-load.ts); every publication is an `mqtt-publish` event a trivial trigger runs on. Measured, each
 * as the median of several runs:
 *   - publish → PUBACK, saturated, trigger disabled (the event is durable before PUBACK);
 *   - publish → trigger finished, saturated (until every message's trigger ran: a bus consumer subscribed
 *     after the trigger engine sees an event once the triggers for it have finished, as in bench/events.ts);
 *   - publish → trigger finished latency (p50, p99) at a paced rate.
 * The references, measured in the same run with the same devices and the same load, each in a process of its own:
 *   - a Mosquitto the bench starts fresh (bench/reference/mosquitto.ts: a free loopback port, anonymous,
 *     persistence off, `max_queued_messages 0` so it delivers every message to the subscriber; installed with
 *     `apt-get install -y mosquitto` when missing and the bench runs as root). BENCH_MQTT_REFERENCE=<url>
 *     measures an existing broker instead (e.g. the system's at mqtt://127.0.0.1:1883; when unreachable its
 *     column stays empty), and BENCH_MQTT_REFERENCE=none measures no Mosquitto;
 *   - a bare aedes, the broker library the service is built on, without the service's work (no log-in, aedes'
 *     in-memory persistence, no events; bench/reference/aedes.ts): how much of the service's cost is the
 *     library's and how much its own. BENCH_MQTT_AEDES=0 leaves it out.
 * On a reference "finished" means one subscriber to `bench/#` (QoS 1) received the message. Its PUBACK rate is
 * measured twice: with that subscriber receiving every message (issue 23's reference: "Mosquitto with a
 * subscriber", `max_queued_messages 0`; the round ends once all were received, as the service's ends once its bus
 * handed every event on), and, stricter, on topics nobody subscribes to; every run has each reference's round, then the service's, of each
 * kind. Each device keeps a window of publishes in flight: WINDOW un-acked in the PUBACK rounds, FINISH_WINDOW
 * not yet finished in the saturated finished rounds (so no broker's backlog grows without bound).
 * The whole is run on SQLite, then on PostgreSQL (a database of its own on IOTBRIDGE_TEST_POSTGRES_URL's server,
 * skipped when unreachable), each with its reference rounds in the same run; the PostgreSQL figures are also given
 * as a share of SQLite's, and, since the two halves run minutes apart on a machine whose speed moves, as the share
 * of each against the Mosquitto of its own half. BENCH_MQTT_DIALECTS=sqlite (or postgres) runs one.
 *
 *   npm run bench:mqtt        (compiles into dist/ first and runs the compiled service, as npm start does)
 *   BENCH_MQTT_DEVICES=200 BENCH_MQTT_MESSAGES=5000 BENCH_RUNS=5 npm run bench:mqtt
 *   BENCH_MQTT_DEVICES=20 BENCH_MQTT_MESSAGES=40000 npm run bench:mqtt      # issue 23's "20 clients × 2,000"
 *   BENCH_MQTT_REFERENCE=mqtt://127.0.0.1:1884 BENCH_MQTT_RATE=1000 npm run bench:mqtt
 *   BENCH_MQTT_AEDES=0 BENCH_MQTT_REFERENCE=none npm run bench:mqtt     # the service alone
 *   BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench:mqtt
 *   BENCH_MQTT_DEVICES=10 BENCH_MQTT_MESSAGES=2000 BENCH_RUNS=1 BENCH_MQTT_PACED_SECONDS=1 npm run bench:mqtt   # a quick check
 *
 * Knobs: BENCH_MQTT_DEVICES (100), BENCH_MQTT_MESSAGES (per saturated round, 20,000), BENCH_RUNS (3),
 * BENCH_MQTT_WINDOW (10), BENCH_MQTT_FINISH_WINDOW (3), BENCH_MQTT_RATE (500 msg/s),
 * BENCH_MQTT_PACED_SECONDS (3), BENCH_MQTT_REFERENCE (unset: a fresh Mosquitto; a URL; `none`),
 * BENCH_MQTT_AEDES (unset or 1: a fresh bare aedes; 0: none),
 * BENCH_MQTT_DIALECTS (`sqlite,postgres`), BENCH_SERVICE_NODE_ARGS, BENCH_EVENT_PARALLELISM (bench/mqtt-service.ts), BENCH_TIMEOUT (s before the
 * whole bench gives up; from the settings).
 */
import { fork } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { cpus } from 'node:os';
import type { MqttClient } from 'mqtt';
import { batched, closingAll, connect, CpuPerMessage, duplicateFinishes, FINISH_WINDOW, MESSAGES, PACED_SECONDS, paced, RATE, retire, saturated, WINDOW, type Latency, type Target } from './mqtt-load.js';
import type { ServiceMessage } from './mqtt-service.js';
import { startBareAedes, type BareAedes } from './reference/aedes.js';
import { postgresDatabase, POSTGRES_URL } from './reference/postgres.js';
import { childrenCpuSecondsOf, cpuSecondsOf, serverCpuSecondsOf, serviceNodeArgs, temporaryDirectory, watchdog } from './reference/processes.js';
import { startMosquitto, type Mosquitto } from './reference/mosquitto.js';

const DEVICES = Number(process.env.BENCH_MQTT_DEVICES ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** Unset: a Mosquitto started by the bench; `none`: no Mosquitto; else the URL of a broker to measure. */
const REFERENCE_SETTING = process.env.BENCH_MQTT_REFERENCE;
/** A bare aedes started by the bench unless `0`. */
const BARE_AEDES = process.env.BENCH_MQTT_AEDES !== '0';
const DIALECTS = (process.env.BENCH_MQTT_DIALECTS ?? 'sqlite,postgres').split(',').map((name) => name.trim().toLowerCase());
/** Per run, rounds of the service and of up to two references. */
const TIMEOUT = Number(process.env.BENCH_TIMEOUT ?? DIALECTS.length * (600 + RUNS * 3 * (3 * (MESSAGES / 1000) + 2 * PACED_SECONDS + 10)));
/** A round of the service that makes no progress for this long has stalled: it fails instead of hanging. */
const STALL_MS = 15_000;
/** The same for a reference, which has nothing slow to wait for: a stall there is a dropped message. */
const REFERENCE_STALL_MS = 5_000;
/** Attempts of a reference round before its figure is left out. */
const REFERENCE_ATTEMPTS = 3;
const TOKEN = 'AT:bench-admin-token-000000000';
const PASSWORD = 'bench-device-secret';
const RUN_ID = `${process.pid.toString(36)}${Date.now().toString(36)}`;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** A reference broker, measured beside the service in the same run. */
interface Reference {
  /** Its column in the table: "Mosquitto", "bare aedes". */
  readonly name: string;
  /** Its ratio column is "ratio bridge/<short>". */
  readonly short: string;
  readonly url: string;
  /** What it is and where it runs, for the report's first line. */
  readonly label: string;
  /** Started by the bench, so it must answer; a broker given by URL may not (its column then stays empty). */
  readonly own: boolean;
  /** Its process, whose CPU per message is reported beside the service's (unknown for a broker given by URL). */
  readonly pid: number | undefined;
}

/** A reference's part of one run: its devices and subscriber (none when it did not answer) and its figures. */
interface ReferenceRun {
  readonly reference: Reference;
  readonly target: Target | undefined;
  readonly ack: number[];
  /** PUBACK rate while its subscriber receives every message (issue 23's reference). */
  readonly ackDelivering: number[];
  readonly finished: number[];
  readonly latency: Latency[];
  readonly cpuAck: CpuPerMessage;
  readonly cpuAckDelivering: CpuPerMessage;
  readonly cpuFinished: CpuPerMessage;
  /** Kinds of round left out after REFERENCE_ATTEMPTS stalls. */
  readonly failedKinds: Set<string>;
}

/**
 * The same devices on a reference, and one subscriber to bench/# that "finishes" each message. Each finishing
 * round gets a new subscriber connection. Mosquitto 2.0.11 with its default max_queued_messages was seen to
 * drop messages for the subscriber now and then ("Outgoing messages are being dropped" in its log) with at most
 * 500 outstanding: such a round stalls and is tried again (`onReference` in `run`).
 */
async function connectReference(reference: Reference, closing: MqttClient[]): Promise<Target> {
  const incidents: string[] = [];
  let subscriber: MqttClient | undefined;
  let subscribers = 0;
  const target: Target = {
    name: reference.name,
    clients: [],
    // PUBACK-only messages go where nobody subscribes, as the bridge's go to no trigger.
    topic: (d, tag, finishing) => `${finishing ? 'bench' : 'bench-puback'}/${tag}/${d}`,
    current: undefined,
    incidents,
    stallMs: REFERENCE_STALL_MS,
    beforeFinishing: async () => {
      if (subscriber) {
        retire(subscriber);
        await subscriber.endAsync();
      }
      const fresh = await connect(reference.url, { clientId: `bench-sub-${RUN_ID}-${subscribers++}`, connectTimeout: 3000 }, incidents, `${reference.name} subscriber`);
      closing.push(fresh);
      fresh.on('message', (topic, payload) => {
        const round = target.current;
        if (round && topic.startsWith(`bench/${round.tag}/`)) round.finish(Number(payload.toString()));
      });
      await fresh.subscribeAsync('bench/#', { qos: 1 });
      subscriber = fresh;
    },
  };
  await target.beforeFinishing!();
  await batched(DEVICES, 20, async (i) => {
    const client = await connect(reference.url, { clientId: `bench-${RUN_ID}-${i}`, connectTimeout: 3000 }, incidents, `${reference.name} device ${i}`);
    closing.push(client);
    target.clients[i] = client;
  });
  return target;
}

/** The storage a run uses: SQLite in its data directory, or a PostgreSQL database. */
interface Dialect {
  readonly name: 'SQLite' | 'PostgreSQL';
  readonly databaseUrl?: string;
}

/** A run's medians, for the PostgreSQL / SQLite comparison. */
interface RunFigures {
  readonly ack: number;
  readonly finished: number;
  /**
   * The first reference's medians in the same run (Mosquitto's PUBACK with its subscriber, and its finished): the
   * machine's speed while this dialect was measured. The two dialects run minutes apart, and this machine's speed
   * moves by half within the hour, so their ratio is also given with each against its own reference.
   */
  readonly reference?: { readonly name: string; readonly ack: number; readonly finished: number } | undefined;
}

async function main(): Promise<void> {
  watchdog(TIMEOUT, 'bench:mqtt');
  // The references first, so that a missing Mosquitto stops the bench before the long set-up.
  let mosquitto: Mosquitto | undefined;
  let aedes: BareAedes | undefined;
  try {
    if (REFERENCE_SETTING === undefined) mosquitto = await startMosquitto();
    if (BARE_AEDES) aedes = await startBareAedes();
    const references: Reference[] = [];
    const mosquittoUrl = mosquitto?.url ?? (REFERENCE_SETTING === 'none' ? undefined : REFERENCE_SETTING);
    if (mosquittoUrl) {
      const label = mosquitto ? `${mosquitto.version} started by the bench at ${mosquitto.url} (its own process, max_queued_messages 0)` : `the broker at ${mosquittoUrl}`;
      references.push({ name: 'Mosquitto', short: 'Mosquitto', url: mosquittoUrl, label, own: mosquitto !== undefined, pid: mosquitto?.child.process.pid });
    }
    if (aedes) {
      const label = `bare ${aedes.version} started by the bench at ${aedes.url} (its own process, no authentication, in-memory persistence)`;
      references.push({ name: 'bare aedes', short: 'aedes', url: aedes.url, label, own: true, pid: aedes.child.process.pid });
    }
    const figures = new Map<Dialect['name'], RunFigures>();
    if (DIALECTS.includes('sqlite')) figures.set('SQLite', await run({ name: 'SQLite' }, references));
    if (DIALECTS.includes('postgres')) {
      const postgres = await postgresDatabase();
      if (!postgres) console.log(`\nPostgreSQL not reachable at ${POSTGRES_URL}: skipped`);
      else {
        try {
          console.log('');
          figures.set('PostgreSQL', await run({ name: 'PostgreSQL', databaseUrl: postgres.url }, references));
        } finally {
          await postgres.drop();
        }
      }
    }
    const sqlite = figures.get('SQLite');
    const postgres = figures.get('PostgreSQL');
    if (sqlite && postgres) {
      console.log(`\nPostgreSQL / SQLite (target ≥ 0.8): PUBACK ${(postgres.ack / sqlite.ack).toFixed(2)}, finished ${(postgres.finished / sqlite.finished).toFixed(2)}`);
      const [pg, lite] = [postgres.reference, sqlite.reference];
      if (pg && lite) {
        // Each dialect's figure as a share of the reference measured beside it, then the two shares compared.
        const share = (ours: number, theirs: number, ourRef: number, theirRef: number) => (ours / ourRef / (theirs / theirRef)).toFixed(2);
        console.log(
          `PostgreSQL / SQLite, each against the ${lite.name} of its own half of the run (that reference moved PUBACK ×${(pg.ack / lite.ack).toFixed(2)}, finished ×${(pg.finished / lite.finished).toFixed(2)} between the halves): ` +
            `PUBACK ${share(postgres.ack, sqlite.ack, pg.ack, lite.ack)}, finished ${share(postgres.finished, sqlite.finished, pg.finished, lite.finished)}`,
        );
      }
    }
    if (mosquitto && mosquitto.dropped() > 0) console.log(`!! Mosquitto logged ${mosquitto.dropped()} times that it dropped messages:\n${mosquitto.child.tail()}`);
  } finally {
    await Promise.all([mosquitto?.stop(), aedes?.stop()]);
  }
}

/** The benchmark against `references` (none: IoT Bridge alone), each measured in the same run. */
async function run(dialect: Dialect, references: readonly Reference[]): Promise<RunFigures> {
  const dataDir = await temporaryDirectory('iotbridge-bench-mqtt-');
  let bridgeTarget: Target | undefined;
  // The service in its own process; it reports its ports, the messages whose triggers finished, and at the
  // end how many warnings and errors it logged (shown on stderr as they come).
  // Compiled (npm run bench:mqtt), the service runs as `npm start` runs it; from source, under tsx.
  const compiled = import.meta.url.endsWith('.js');
  const service = fork(new URL(compiled ? './mqtt-service.js' : './mqtt-service.ts', import.meta.url), [], {
    execArgv: [...(compiled ? [] : ['--import', 'tsx']), ...serviceNodeArgs()],
    env: { ...process.env, BENCH_DATA_DIR: dataDir, BENCH_ADMIN_TOKEN: TOKEN, ...(dialect.databaseUrl ? { BENCH_DATABASE_URL: dialect.databaseUrl } : {}) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let serviceWarnings = 0;
  const serviceStopped = new Promise<void>((resolve) => service.once('exit', () => resolve()));
  const started = await new Promise<{ ports: Record<string, number> }>((resolve, reject) => {
    service.once('exit', (code) => reject(new Error(`the service exited (${String(code)}) before it started`)));
    service.on('message', (message: ServiceMessage) => {
      if (message.kind === 'started') resolve(message);
      else if (message.kind === 'stopped') serviceWarnings = message.warnings;
      else {
        const round = bridgeTarget?.current;
        if (!round) return;
        for (const [tag, seqs] of message.rounds) if (tag === round.tag) for (const seq of seqs) round.finish(seq);
      }
    });
  });
  const closing: MqttClient[] = [];
  try {
    const base = `http://127.0.0.1:${started.ports.http}`;
    const api = async (method: string, url: string, token: string, body?: unknown): Promise<Record<string, unknown>> => {
      const response = await fetch(base + url, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
      return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    };

    // Set-up through the HTTP API: an account with its own token, an MQTT service, the devices and their passwords.
    const setupStarted = performance.now();
    const account = await api('POST', '/accounts', TOKEN, { name: 'bench-mqtt' });
    const token = (await api('POST', '/tokens', `${TOKEN}:${account.accountId as string}`, { name: 'bench' })).token as string;
    const serviceId = (await api('POST', '/services', token, { name: 'bench-mqtt', type: 'mqtt' })).id as string;
    const keys = Array.from({ length: DEVICES }, (_, i) => `bench-${i}`);
    const endpointIds: string[] = [];
    await batched(DEVICES, 20, async (i) => {
      endpointIds[i] = (await api('POST', '/endpoints', token, { key: keys[i], serviceId })).id as string;
    });
    // Chosen passwords are hashed with PBKDF2 (~5 ms each, 2 at once in the service): a few at a time.
    const passwordsStarted = performance.now();
    await batched(DEVICES, 8, (i) => api('PUT', `/endpoints/${endpointIds[i]!}/credentials`, token, { password: PASSWORD }).then(() => undefined));
    const passwordSeconds = (performance.now() - passwordsStarted) / 1000;
    const triggerBody = { name: 'trivial', events: ['mqtt-publish'], script: 'var x = event.data.topic;' };
    const triggerId = (await api('POST', '/triggers', token, { ...triggerBody, enabled: false })).id as string;
    const setTrigger = (enabled: boolean) => api('PUT', `/triggers/${triggerId}`, token, { ...triggerBody, enabled });
    const bridgeIncidents: string[] = [];
    const bridgeClients: MqttClient[] = [];
    // The first log-in of each device verifies its PBKDF2 hash: a few at a time.
    const loginsStarted = performance.now();
    await batched(DEVICES, 8, async (i) => {
      const client = await connect(`mqtt://127.0.0.1:${started.ports.mqtt!}`, { username: keys[i], password: PASSWORD, clientId: `bench-${RUN_ID}-${i}` }, bridgeIncidents, `bridge device ${i}`);
      closing.push(client);
      bridgeClients[i] = client;
    });
    bridgeTarget = { name: 'IoT Bridge', clients: bridgeClients, topic: (d, tag) => `${keys[d]!}/bench/${tag}`, current: undefined, incidents: bridgeIncidents, stallMs: STALL_MS };
    const loginSeconds = (performance.now() - loginsStarted) / 1000;
    const setupSeconds = (performance.now() - setupStarted) / 1000;

    // The references: the same devices on each, with its subscriber.
    const refs: ReferenceRun[] = [];
    for (const reference of references) {
      let target: Target | undefined;
      try {
        target = await connectReference(reference, closing);
      } catch (error) {
        if (reference.own) throw error;
        console.log(`!! ${reference.name} not reachable at ${reference.url} (${(error as Error).message || String(error)}): no ${reference.name} figures, no ratio.\n`);
      }
      const cpu = () => cpuSecondsOf(reference.pid);
      refs.push({ reference, target, ack: [], ackDelivering: [], finished: [], latency: [], cpuAck: new CpuPerMessage(cpu), cpuAckDelivering: new CpuPerMessage(cpu), cpuFinished: new CpuPerMessage(cpu), failedKinds: new Set() });
    }

    /**
     * A reference round of one kind. A stalled one (a dropped message: see `connectReference`) is reported and
     * tried again with new topics and a new subscriber; after REFERENCE_ATTEMPTS the figure is left out and so
     * are that reference's later rounds of the kind, so the benchmark stays short.
     */
    const referenceFailures: string[] = [];
    const onReference = async <T>(ref: ReferenceRun, kind: string, work: (target: Target) => Promise<T>): Promise<T | undefined> => {
      const target = ref.target;
      if (!target || ref.failedKinds.has(kind)) return undefined;
      for (let attempt = 1; ; attempt++) {
        try {
          return await work(target);
        } catch (error) {
          const last = attempt === REFERENCE_ATTEMPTS;
          referenceFailures.push(`${(error as Error).message}; ${last ? 'the reference figure is left out' : 'tried again'}`);
          if (last) {
            ref.failedKinds.add(kind);
            return undefined;
          }
        }
      }
    };

    let roundNo = 0;
    const tag = () => `${RUN_ID}-${roundNo++}`;
    const bridgeAck: number[] = [];
    const bridgeFinished: number[] = [];
    const bridgeLatency: Latency[] = [];
    const push = <T>(into: T[], value: T | undefined) => value !== undefined && into.push(value);

    const serviceCpu = () => cpuSecondsOf(service.pid);
    const serviceAndWorkersCpu = () => {
      const own = serviceCpu();
      const workers = service.pid === undefined ? undefined : childrenCpuSecondsOf(service.pid, 'worker');
      return own === undefined || workers === undefined ? undefined : own + workers;
    };
    const bridgeAckCpu = new CpuPerMessage(serviceCpu);
    const bridgeFinishedCpu = new CpuPerMessage(serviceAndWorkersCpu);
    // PostgreSQL's share of the work, when it runs on this machine (the bench's own database is its only load).
    const databaseCpu = () => (dialect.databaseUrl ? serverCpuSecondsOf('postgres') : undefined);
    const databaseAckCpu = new CpuPerMessage(databaseCpu);
    const databaseFinishedCpu = new CpuPerMessage(databaseCpu);
    // This process: the devices' clients and, in the finished rounds, the service's reports. It shares the two cores.
    const loadCpu = () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1e6;
    };
    const loadAckCpu = new CpuPerMessage(loadCpu);
    const loadFinishedCpu = new CpuPerMessage(loadCpu);

    const measureStarted = performance.now();
    // Phase 1: publish → PUBACK, trigger disabled. Each reference's rounds (nobody subscribed; its subscriber
    // receiving every message, as issue 23 measures it, the round ending once all were received), then the
    // service's (its bus hands every event to the bench's consumer).
    for (const ref of refs) await onReference(ref, 'puback', (t) => saturated(t, tag(), false, false)); // warm-up
    for (const ref of refs) await onReference(ref, 'puback-delivering', (t) => saturated(t, tag(), true, true)); // warm-up
    await saturated(bridgeTarget, tag(), true, true);
    for (let r = 0; r < RUNS; r++) {
      for (const ref of refs) push(ref.ack, (await onReference(ref, 'puback', (t) => ref.cpuAck.measure(MESSAGES, () => saturated(t, tag(), false, false))))?.acked);
      for (const ref of refs) {
        push(ref.ackDelivering, (await onReference(ref, 'puback-delivering', (t) => ref.cpuAckDelivering.measure(MESSAGES, () => saturated(t, tag(), true, true))))?.acked);
      }
      const ackRound = () => bridgeAckCpu.measure(MESSAGES, () => saturated(bridgeTarget!, tag(), true, true));
      bridgeAck.push((await loadAckCpu.measure(MESSAGES, () => databaseAckCpu.measure(MESSAGES, ackRound))).acked);
    }
    // Phase 2: publish → finished (trigger / subscriber), saturated and paced.
    await setTrigger(true);
    for (const ref of refs) await onReference(ref, 'finished', (t) => saturated(t, tag(), true, true, true)); // warm-up
    await saturated(bridgeTarget, tag(), true, true, true);
    let triggered = MESSAGES;
    for (let r = 0; r < RUNS; r++) {
      for (const ref of refs) push(ref.finished, (await onReference(ref, 'finished', (t) => ref.cpuFinished.measure(MESSAGES, () => saturated(t, tag(), true, true, true))))?.finished);
      const finishedRound = () => bridgeFinishedCpu.measure(MESSAGES, () => saturated(bridgeTarget!, tag(), true, true, true));
      bridgeFinished.push((await loadFinishedCpu.measure(MESSAGES, () => databaseFinishedCpu.measure(MESSAGES, finishedRound))).finished);
      for (const ref of refs) push(ref.latency, await onReference(ref, 'paced', (t) => paced(t, tag())));
      bridgeLatency.push(await paced(bridgeTarget, tag()));
      triggered += MESSAGES + Math.max(1, Math.round(RATE * PACED_SECONDS));
    }
    await setTrigger(false);
    const measureSeconds = (performance.now() - measureStarted) / 1000;

    // Every message of phase 2 ran the trigger once, successfully (records are written within a tick of the run).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const executions = (await api('GET', `/executions?triggerId=${triggerId}&limit=1`, token)).total as number;
    const failed = await api('GET', `/executions?triggerId=${triggerId}&status=failed&limit=1`, token);

    const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US')} msg/s`;
    const ms = (n: number) => `${n.toFixed(1)} ms`;
    const ratio = (bridgeValue: number, referenceValues: number[]) => (referenceValues.length === RUNS ? (bridgeValue / median(referenceValues)).toFixed(2) : '–');
    const refCell = (values: number[], show: (n: number) => string) => (values.length === RUNS ? show(median(values)) : '–');
    const answered = refs.filter((ref) => ref.target);
    console.log(
      `# IoT Bridge MQTT: ${cpus().length} cores, Node ${process.version}, ${dialect.name}, the service in its own process, ${DEVICES} devices (mqtt.js, MQTT 3.1.1, QoS 1, in the benchmark's process), ` +
        `${MESSAGES} messages per round, in flight per device ≤${WINDOW} un-acked (≤${FINISH_WINDOW} unfinished when saturating to finished), median of ${RUNS} runs; ` +
        `${answered.length > 1 ? 'references' : 'reference'}: ${answered.map((ref) => ref.reference.label).join('; ') || 'none'}\n`,
    );
    console.log(`| measure | IoT Bridge |${refs.map((ref) => ` ${ref.reference.name} (reference) | ratio bridge/${ref.reference.short} |`).join('')}`);
    console.log(`|---|---|${'---|---|'.repeat(refs.length)}`);
    const row = (measure: string, bridgeValue: number, show: (n: number) => string, figuresOf: (ref: ReferenceRun) => number[]) =>
      console.log(`| ${measure} | ${show(bridgeValue)} |${refs.map((ref) => ` ${refCell(figuresOf(ref), show)} | ${ratio(bridgeValue, figuresOf(ref))} |`).join('')}`);
    const ack = median(bridgeAck);
    const finished = median(bridgeFinished);
    row('publish → PUBACK, saturated, every message delivered (no trigger, the bus to a consumer / a subscriber; issue 23 target ≥ 1.0)', ack, fmt, (ref) => ref.ackDelivering);
    row('publish → PUBACK, saturated, a reference delivering nothing (no subscriber: stricter than issue 23)', ack, fmt, (ref) => ref.ack);
    row('publish → trigger finished / subscriber received, saturated (target ≥ 0.7)', finished, fmt, (ref) => ref.finished);
    row(`latency publish → finished at ${RATE} msg/s, p50`, median(bridgeLatency.map((l) => l.p50)), ms, (ref) => ref.latency.map((l) => l.p50));
    row(`latency publish → finished at ${RATE} msg/s, p99`, median(bridgeLatency.map((l) => l.p99)), ms, (ref) => ref.latency.map((l) => l.p99));
    console.log('');
    const list = (values: number[], show: (n: number) => string) => (values.length > 0 ? values.map(show).join(', ') : '–');
    const k = (n: number) => Math.round(n).toLocaleString('en-US');
    // Names padded to one width, so that the figures line up.
    const runs = (name: string, acks: number[], finishes: number[], latencies: Latency[], delivering?: number[]) =>
      console.log(
        `runs, ${`${name}:`.padEnd(11)} PUBACK ${list(acks, k)}${delivering ? ` (with a subscriber ${list(delivering, k)})` : ''}; finished ${list(finishes, k)} msg/s; ` +
          `p50/p99 ${latencies.map((l) => `${l.p50.toFixed(1)}/${l.p99.toFixed(1)}`).join(', ')} ms`,
      );
    runs('IoT Bridge', bridgeAck, bridgeFinished, bridgeLatency);
    for (const ref of answered) runs(ref.reference.name, ref.ack, ref.finished, ref.latency, ref.ackDelivering);
    const micros = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(1)} µs`);
    const cpuRatio = (bridgeValue: number | undefined, referenceValue: number | undefined) =>
      bridgeValue === undefined || referenceValue === undefined ? '' : ` (${(bridgeValue / referenceValue).toFixed(1)}×)`;
    const referencesCpu = (bridgeValue: number | undefined, cpuOf: (ref: ReferenceRun) => CpuPerMessage) =>
      answered.map((ref) => `, ${micros(cpuOf(ref).micros())} ${ref.reference.name}${cpuRatio(bridgeValue, cpuOf(ref).micros())}`).join('');
    console.log(
      `CPU per message, measured saturated rounds: PUBACK ${micros(bridgeAckCpu.micros())} the service${referencesCpu(bridgeAckCpu.micros(), (ref) => ref.cpuAck)}` +
        `${answered.length > 0 ? ` (with a subscriber${referencesCpu(bridgeAckCpu.micros(), (ref) => ref.cpuAckDelivering).slice(1)})` : ''}; ` +
        `finished ${micros(bridgeFinishedCpu.micros())} the service with its script workers${referencesCpu(bridgeFinishedCpu.micros(), (ref) => ref.cpuFinished)}`,
    );
    console.log(`CPU per message of the load generator (this process: the devices' clients, and the service's reports when finishing): PUBACK ${micros(loadAckCpu.micros())}; finished ${micros(loadFinishedCpu.micros())}`);
    if (databaseAckCpu.micros() !== undefined) {
      console.log(`CPU per message of PostgreSQL (every postgres process on this machine): PUBACK ${micros(databaseAckCpu.micros())}; finished ${micros(databaseFinishedCpu.micros())}`);
    }
    console.log(`trigger executions recorded: ${executions} of ${triggered} expected, ${failed.total as number} failed; set-up ${setupSeconds.toFixed(1)} s (passwords ${passwordSeconds.toFixed(1)} s, log-ins ${loginSeconds.toFixed(1)} s), measuring ${measureSeconds.toFixed(1)} s`);
    const incidents = [...bridgeTarget.incidents, ...refs.flatMap((ref) => ref.target?.incidents ?? [])];
    if (incidents.length > 0) console.log(`!! ${incidents.length} connection incidents: ${incidents.slice(0, 5).join('; ')}`);
    for (const failure of referenceFailures) console.log(`!! reference round stalled: ${failure}`);
    if (duplicateFinishes() > 0) console.log(`!! ${duplicateFinishes()} messages finished twice (QoS 1 redelivery)`);
    if (executions !== triggered || (failed.total as number) > 0) process.exitCode = 1;
    const yardstick = answered[0];
    const reference =
      yardstick && yardstick.ackDelivering.length === RUNS && yardstick.finished.length === RUNS ? { name: yardstick.reference.name, ack: median(yardstick.ackDelivering), finished: median(yardstick.finished) } : undefined;
    return { ack, finished, reference };
  } finally {
    closingAll();
    await Promise.all(closing.map((client) => client.endAsync(true).catch(() => undefined)));
    service.send('stop');
    await serviceStopped;
    if (serviceWarnings > 0) console.log(`!! the service logged ${serviceWarnings} warnings/errors (on stderr)`);
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
// Everything is closed by now; anything still holding the process open is a leak, reported instead of hanging.
setTimeout(() => {
  console.error('!! handles still open after the benchmark closed everything: exiting');
  process.exit(1);
}, 5000).unref();
