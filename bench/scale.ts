/**
 * Scale benchmark (performance issue: "Scale, a new `npm run bench:scale`"): one service process holding a whole
 * fleet, BENCH_LWM2M_DEVICES registered LwM2M devices and BENCH_MQTT_DEVICES connected MQTT devices (100,000 of
 * each by default), in under 2 GB RSS, while every MQTT device publishes BENCH_RATE QoS 1 messages a second for
 * BENCH_SCALE_SECONDS and nothing acknowledged is lost. No reference program: the figures are the service's own,
 * against the issue's targets.
 *
 *   1. The compiled service (dist/src/cli.js serve, SQLite in a temporary IOTBRIDGE_DATA_DIR) in a process of
 *      its own (startBridge, bench/reference/processes.ts). An `lwm2m` and an `mqtt` service; every endpoint
 *      through `POST /endpoints/bulk` (1,000 a request), the MQTT ones with generated secrets.
 *   2. The LwM2M devices register (bench/scale-lwm2m-load.ts: one UDP socket per device, so the service sees
 *      as many address:port peers) with a lifetime of BENCH_SCALE_LWM2M_LIFETIME s, and stay registered.
 *   3. The MQTT devices log in (bench/scale-mqtt-load.ts: one TCP connection per device, MQTT 3.1.1 written by
 *      hand). Both kinds of device bind loopback source addresses 127.0.0.2 … 127.0.0.<1+S>, so that no address
 *      runs out of ephemeral ports; the generators are several processes when one cannot hold the sockets.
 *   4. Every MQTT device publishes BENCH_RATE a second, the fleet's publishes spread evenly over each second,
 *      for BENCH_SCALE_SECONDS; a device keeps at most BENCH_SCALE_WINDOW publishes un-acked, as a client's
 *      in-flight window, and a publish due while it is full is skipped and counted (so an overloaded service
 *      shows as offered ≠ sent, the bench's memory stays bounded and it ends in bounded time). Then up to
 *      BENCH_SCALE_DRAIN s for the last PUBACKs.
 *   5. Nothing lost: the service's `mqtt-publish` events (`GET /history/counts`) against the PUBACKs the devices
 *      got; the devices still held by the service's own count (`GET /endpoint/count?state=connected`).
 *
 * Measured: the service's RSS (VmRSS of /proc/<pid>/status, once it is idle) after each phase, in all and per
 * 1,000 devices, and its peak (VmHWM); the time to provision, register and connect; publish rate offered,
 * sent and PUBACKed; publish → PUBACK p50/p99 (from the write of the PUBLISH to the PUBACK read, over every
 * message); lost = PUBACKed − stored. The load generators share the machine's cores with the service: their CPU
 * and how late they published against the schedule are printed beside, and, to tell a slow service from a busy
 * machine, the service's GC time and event-loop delay (its GET /metrics), the state of its main thread sampled
 * at 10 Hz (running or waiting for a CPU, sleeping, waiting for the disk) and the machine's CPU split (busy, idle,
 * I/O wait, stolen by a VM host, and how much went to processes other than the service and the generators).
 *
 * File descriptors: the service holds one per MQTT connection, each generator process one per device. The
 * generators are sized to the open-file limit; when the service's need is over the hard limit the bench raises
 * it with `prlimit` (root with CAP_SYS_RESOURCE), and otherwise stops before starting anything, saying how to
 * raise it or how many MQTT devices fit.
 *
 *   npm run bench:scale        (compiles into dist/ first and runs the compiled service, as npm start does)
 *   BENCH_LWM2M_DEVICES=2000 BENCH_MQTT_DEVICES=2000 BENCH_SCALE_SECONDS=10 npm run bench:scale    # a quick check
 *   BENCH_RATE=0.5 BENCH_SCALE_SECONDS=120 npm run bench:scale
 *
 * Knobs: BENCH_LWM2M_DEVICES (100,000), BENCH_MQTT_DEVICES (100,000), BENCH_SCALE_SECONDS (60), BENCH_RATE
 * (publishes per device per second, 1), BENCH_SCALE_WINDOW (un-acked publishes per device, 10),
 * BENCH_SCALE_DRAIN (s to wait for the last PUBACKs, 30), BENCH_SCALE_LWM2M_LIFETIME (s, 86,400),
 * BENCH_SCALE_SOURCES (loopback source addresses; default enough for 10,000 sockets each),
 * BENCH_SCALE_SOCKETS_PER_PROCESS (most devices one generator process holds, 50,000; fewer under a low
 * open-file limit), BENCH_SCALE_REGISTER_WINDOW (Registers in flight, 64), BENCH_SCALE_CONNECT_WINDOW (CONNECTs
 * in flight, 256), BENCH_SERVICE_NODE_ARGS, BENCH_TIMEOUT (s before the whole bench gives up; from the settings).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSecondsOf, findCommand, REPO_ROOT, startBridge, startChild, temporaryDirectory, watchdog, within, type Child } from './reference/processes.js';
import { Histogram, type LoadCommand, type LoadReport, type Lwm2mLoadSettings, type MqttLoadSettings, type MqttProgress } from './scale-common.js';

const LWM2M_DEVICES = Number(process.env.BENCH_LWM2M_DEVICES ?? 100_000);
const MQTT_DEVICES = Number(process.env.BENCH_MQTT_DEVICES ?? 100_000);
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? 60);
const RATE = Number(process.env.BENCH_RATE ?? 1);
const WINDOW = Number(process.env.BENCH_SCALE_WINDOW ?? 10);
const DRAIN_SECONDS = Number(process.env.BENCH_SCALE_DRAIN ?? 30);
const LIFETIME = Number(process.env.BENCH_SCALE_LWM2M_LIFETIME ?? 86_400);
const SOCKETS_PER_PROCESS = Number(process.env.BENCH_SCALE_SOCKETS_PER_PROCESS ?? 50_000);
const REGISTER_WINDOW = Number(process.env.BENCH_SCALE_REGISTER_WINDOW ?? 64);
const CONNECT_WINDOW = Number(process.env.BENCH_SCALE_CONNECT_WINDOW ?? 256);
/** Generous: ~3 ms a device on top of a minute; the service registers thousands a second. */
const REGISTER_LIMIT_MS = 60_000 + LWM2M_DEVICES * 3;
const CONNECT_LIMIT_MS = 60_000 + MQTT_DEVICES * 3;
const PROVISION_LIMIT_MS = 120_000 + (LWM2M_DEVICES + MQTT_DEVICES) * 2;
const TIMEOUT = Number(process.env.BENCH_TIMEOUT ?? Math.round(300 + (PROVISION_LIMIT_MS + REGISTER_LIMIT_MS + CONNECT_LIMIT_MS) / 1000 + SECONDS + DRAIN_SECONDS + 120));
/** The issue's bound on the service's RSS. */
const RSS_TARGET = 2e9;
/** Descriptors the service uses besides MQTT connections (database, listeners, HTTP, workers) / a generator besides its sockets. */
const SERVICE_FD_RESERVE = 1000;
const GENERATOR_FD_RESERVE = 200;
/** Sockets per source address: well inside one address's ephemeral port range. */
const SOCKETS_PER_SOURCE = 10_000;
const BULK_SIZE = 1000;
const BULK_CONCURRENCY = 4;
const TOKEN = 'AT:bench-admin-token-000000000';
const LWM2M_PREFIX = 'scale-lw-';
const MQTT_PREFIX = 'scale-mq-';
/** Compiled (`npm run bench:scale`), the generators run from dist/ too; from source, under tsx. */
const COMPILED = import.meta.url.endsWith('.js');

/** A setting the machine cannot meet: printed without a stack, the bench stops before starting anything. */
class SetupError extends Error {}

const k = (n: number) => Math.round(n).toLocaleString('en-US');
const mib = (bytes: number) => `${k(bytes / 2 ** 20)} MiB`;
const ms = (value: number | undefined) => (value === undefined ? '–' : value < 10 ? `${value.toFixed(2)} ms` : `${k(value)} ms`);

function openFileLimit(): { soft: number; hard: number } {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = (line ?? '').split(/\s+/).slice(3, 5).map((v) => (v === 'unlimited' ? Infinity : Number(v)));
  return { soft: soft ?? 1024, hard: hard ?? 1024 };
}

/**
 * The hard open-file limit the service and the generators will have (children inherit this process's): raised
 * to `wanted` with prlimit when it is lower and that is possible; a SetupError when even `needed` cannot be had.
 */
function ensureOpenFiles(needed: number, wanted: number): number {
  let { hard } = openFileLimit();
  if (hard >= wanted) return hard;
  let why: string;
  const prlimit = findCommand('prlimit');
  if (process.getuid?.() !== 0) why = 'the bench does not run as root';
  else if (!prlimit) why = 'prlimit (util-linux) is not installed';
  else {
    const raised = spawnSync(prlimit, [`--pid=${process.pid}`, `--nofile=${wanted}:${wanted}`], { encoding: 'utf8' });
    hard = openFileLimit().hard;
    if (raised.status === 0 && hard >= wanted) return hard;
    why = `\`prlimit --nofile=${wanted}:${wanted}\` failed: ${raised.stderr.trim() || `exit ${String(raised.status)}`} (no CAP_SYS_RESOURCE, as in a container)`;
  }
  if (hard >= needed) return hard;
  throw new SetupError(
    `The service must hold ${k(MQTT_DEVICES)} MQTT connections, one file descriptor each (${k(needed)} with its own), but the open-file limit is ` +
      `${k(hard)} (hard) and cannot be raised here: ${why}.\n` +
      `   Raise it where the bench starts, as root: \`ulimit -Hn ${wanted} && ulimit -n ${wanted} && npm run bench:scale\`; ` +
      `for a container \`docker run --ulimit nofile=${wanted}:${wanted} …\` (or --cap-add SYS_RESOURCE); for a systemd unit LimitNOFILE=${wanted}.\n` +
      `   Or measure a smaller fleet: BENCH_MQTT_DEVICES=${Math.max(0, Math.floor((hard - SERVICE_FD_RESERVE) / 1000) * 1000)} or fewer fits this limit.`,
  );
}

/** Loopback source addresses 127.0.0.2 … for `sockets` sockets of one protocol, none of them near its ephemeral port range's size. */
function sourceAddresses(sockets: number): string[] {
  const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  const perAddress = Math.min(SOCKETS_PER_SOURCE, Math.floor(((high ?? 60999) - (low ?? 32768) + 1) / 2));
  const needed = Math.max(2, Math.ceil(sockets / perAddress));
  const count = Math.max(needed, Number(process.env.BENCH_SCALE_SOURCES ?? 0));
  if (count > 254) throw new SetupError(`${k(sockets)} sockets need ${count} loopback source addresses; 127.0.0.2 … 127.0.0.255 are 254`);
  return Array.from({ length: count }, (_, i) => `127.0.0.${2 + i}`);
}

/** VmRSS and VmHWM (peak) of a process, bytes. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** CPU seconds (user + system, all threads) a process has used; 0 once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  return cpuSecondsOf(pid) ?? 0;
}

/** The machine's CPU time so far (/proc/stat, all cores, in clock ticks): busy (user, nice, system, irq), idle, I/O wait, stolen by the VM's host. */
function machineCpu(): { busy: number; idle: number; iowait: number; steal: number } {
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { busy: user + nice + system + irq + softirq, idle, iowait, steal };
}

/** Waits until the service is idle (under 5 % of a core over half a second, at most 30 s), so RSS is read after the phase's work. */
async function quiesce(pid: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  let before = cpuSeconds(pid);
  while (Date.now() < deadline) {
    await sleep(500);
    const now = cpuSeconds(pid);
    if (now - before < 0.025) return;
    before = now;
  }
}

/** A load generator process: its reports by kind, the latest progress, and commands on its stdin. */
class Generator {
  readonly child: Child;
  latest: MqttProgress | undefined;
  readonly #received = new Map<string, LoadReport>();
  readonly #waiting = new Map<string, (report: LoadReport) => void>();

  constructor(name: string, script: string, settings: MqttLoadSettings | Lwm2mLoadSettings) {
    const file = path.join(REPO_ROOT, COMPILED ? `dist/bench/${script}.js` : `bench/${script}.ts`);
    this.child = startChild(name, process.execPath, [...(COMPILED ? [] : ['--import', 'tsx']), file, JSON.stringify(settings)], {
      showStderr: true,
      onLine: (line) => {
        if (!line.startsWith('{"kind"')) return;
        const report = JSON.parse(line) as LoadReport;
        if (report.kind === 'progress') this.latest = report;
        const waiter = this.#waiting.get(report.kind);
        this.#waiting.delete(report.kind);
        if (waiter) waiter(report);
        else this.#received.set(report.kind, report);
      },
    });
  }

  /** The next report of `kind` (or the one that came before anybody asked), within `limitMs`. */
  next<K extends LoadReport['kind']>(kind: K, limitMs: number): Promise<Extract<LoadReport, { kind: K }>> {
    const early = this.#received.get(kind);
    this.#received.delete(kind);
    const report = early ? Promise.resolve(early) : new Promise<LoadReport>((resolve) => this.#waiting.set(kind, resolve));
    return within(`${this.child.name}: waiting for "${kind}"`, limitMs, report as Promise<Extract<LoadReport, { kind: K }>>, this.child);
  }

  send(command: LoadCommand): void {
    this.child.process.stdin?.write(`${JSON.stringify(command)}\n`);
  }
}

/** What the service says about its memory, garbage collection and event pipeline (`GET /metrics`: prom-client's defaults and its own). */
interface ServiceGauges {
  readonly heapUsed: number;
  readonly external: number;
  readonly backlog: number;
  /** Seconds spent in GC since start: all kinds, and major (mark-compact) alone. */
  readonly gcSeconds: number;
  readonly gcMajorSeconds: number;
  /** Longest event-loop delay since the previous scrape (prom-client resets it at each one). */
  readonly loopDelayMax: number;
}

/** `series` (`name` or `name{labels}`) → value, from the Prometheus text format. */
function parseMetrics(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

function toGauges(metrics: Map<string, number>): ServiceGauges {
  let gcSeconds = 0;
  for (const [series, value] of metrics) if (series.startsWith('nodejs_gc_duration_seconds_sum{')) gcSeconds += value;
  return {
    heapUsed: metrics.get('nodejs_heap_size_used_bytes') ?? NaN,
    external: metrics.get('nodejs_external_memory_bytes') ?? NaN,
    backlog: metrics.get('iotbridge_events_backlog') ?? NaN,
    gcSeconds,
    gcMajorSeconds: metrics.get('nodejs_gc_duration_seconds_sum{kind="major"}') ?? 0,
    loopDelayMax: metrics.get('nodejs_eventloop_lag_max_seconds') ?? NaN,
  };
}

const describeGauges = (g: ServiceGauges | undefined) => (g ? `V8 heap used ${mib(g.heapUsed)}, external ${mib(g.external)}, events waiting ${k(g.backlog)}` : 'GET /metrics did not answer');

/** The state of a process's main thread (R running, S sleeping, e.g. in epoll, D waiting for the disk, …). */
function threadState(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]![0]!;
  } catch {
    return '?';
  }
}

interface RssPoint {
  readonly label: string;
  readonly devices: number;
  readonly rss: number;
  readonly gauges: ServiceGauges | undefined;
  /** Devices this phase added and the RSS before it, for the added cost per device. */
  readonly added?: { readonly devices: number; readonly fromRss: number };
}

async function main(): Promise<void> {
  watchdog(TIMEOUT, 'bench:scale');
  // Everything the machine must allow is checked before anything starts.
  const perProcessWanted = Math.min(SOCKETS_PER_PROCESS, Math.max(LWM2M_DEVICES, MQTT_DEVICES, 1));
  const hardLimit = ensureOpenFiles(MQTT_DEVICES + SERVICE_FD_RESERVE, Math.max(MQTT_DEVICES + SERVICE_FD_RESERVE, perProcessWanted + GENERATOR_FD_RESERVE));
  const perProcess = Math.max(1, Math.min(SOCKETS_PER_PROCESS, hardLimit - GENERATOR_FD_RESERVE));
  const lwm2mProcesses = Math.ceil(LWM2M_DEVICES / perProcess);
  const mqttProcesses = Math.ceil(MQTT_DEVICES / perProcess);
  const sources = sourceAddresses(Math.max(LWM2M_DEVICES, MQTT_DEVICES));
  const offeredRate = MQTT_DEVICES * RATE;
  console.log(
    `# IoT Bridge at scale: ${k(LWM2M_DEVICES)} LwM2M + ${k(MQTT_DEVICES)} MQTT devices held by one service process (SQLite), ${cpus().length} cores, Node ${process.version}\n` +
      `# MQTT: ${RATE}/s per device (${k(offeredRate)} msg/s offered) for ${SECONDS} s, QoS 1, ≤ ${WINDOW} un-acked per device; LwM2M lifetime ${k(LIFETIME)} s\n` +
      `# generators: ${lwm2mProcesses} LwM2M + ${mqttProcesses} MQTT processes (≤ ${k(perProcess)} devices each), source addresses ${sources[0]} … ${sources.at(-1)}; open-file limit ${k(hardLimit)}; watchdog ${k(TIMEOUT)} s\n`,
  );

  const dataDir = await temporaryDirectory('iotbridge-bench-scale-');
  const loadDir = await temporaryDirectory('iotbridge-bench-scale-load-');
  const generators: Generator[] = [];
  let service: Child | undefined;
  try {
    const started = await startBridge({ IOTBRIDGE_DATA_DIR: dataDir, IOTBRIDGE_ADMIN_TOKEN: TOKEN });
    service = started.child;
    const pid = service.process.pid!;
    const base = `http://127.0.0.1:${started.ports.http!}`;
    const api = async <T>(method: string, url: string, body?: unknown): Promise<T> => {
      const response = await fetch(base + url, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(300_000),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text.slice(0, 500)}`);
      return JSON.parse(text) as T;
    };
    const gauges = async (): Promise<ServiceGauges | undefined> => {
      try {
        const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(10_000) });
        return toGauges(parseMetrics(await response.text()));
      } catch {
        return undefined;
      }
    };
    const rssPoints: RssPoint[] = [];
    const sample = async (label: string, devices: number, added?: RssPoint['added']) => {
      await quiesce(pid);
      const point = { label, devices, rss: memory(pid).rss, gauges: await gauges(), ...(added && { added }) };
      rssPoints.push(point);
      console.log(`   service RSS ${mib(point.rss)}: ${describeGauges(point.gauges)}; ${k(readdirSync(`/proc/${pid}/fd`).length)} open files (${label})`);
      return point.rss;
    };
    await sample('started, no endpoints', 0);

    // 1. Endpoints, through the API as an operator provisions a fleet.
    const lwm2mService = (await api<{ id: string }>('POST', '/services', { name: 'scale-lwm2m', type: 'lwm2m' })).id;
    const mqttService = (await api<{ id: string }>('POST', '/services', { name: 'scale-mqtt', type: 'mqtt' })).id;
    console.log(`creating ${k(LWM2M_DEVICES + MQTT_DEVICES)} endpoints (POST /endpoints/bulk, ${k(BULK_SIZE)} a request, ${BULK_CONCURRENCY} at once)…`);
    const provisionStarted = performance.now();
    const passwords = await within('creating the endpoints', PROVISION_LIMIT_MS, provision(api, lwm2mService, mqttService), service);
    const provisionSeconds = (performance.now() - provisionStarted) / 1000;
    console.log(`   ${k(LWM2M_DEVICES + MQTT_DEVICES)} endpoints in ${provisionSeconds.toFixed(1)} s (${k((LWM2M_DEVICES + MQTT_DEVICES) / provisionSeconds)}/s)`);
    const credentials = path.join(loadDir, 'credentials.tsv');
    await writeFile(credentials, passwords.map((password, i) => `${MQTT_PREFIX}${i}\t${password}\n`).join(''));
    const afterEndpoints = await sample(`${k(LWM2M_DEVICES + MQTT_DEVICES)} endpoints created`, 0);

    // 2. LwM2M devices register.
    console.log(`registering ${k(LWM2M_DEVICES)} LwM2M devices (${lwm2mProcesses} processes, ${REGISTER_WINDOW} Registers in flight)…`);
    const lwm2m = Array.from({ length: lwm2mProcesses }, (_, p) => {
      const settings: Lwm2mLoadSettings = { port: started.ports.coap!, keyPrefix: LWM2M_PREFIX, devices: LWM2M_DEVICES, process: p, processes: lwm2mProcesses, sources, lifetime: LIFETIME, window: Math.max(1, Math.ceil(REGISTER_WINDOW / lwm2mProcesses)), registerLimitMs: REGISTER_LIMIT_MS };
      return new Generator(`LwM2M devices ${p + 1}/${lwm2mProcesses}`, 'scale-lwm2m-load', settings);
    });
    generators.push(...lwm2m);
    const registered = await Promise.all(lwm2m.map((g) => g.next('registered', REGISTER_LIMIT_MS + 60_000)));
    const registration = {
      ok: registered.reduce((sum, r) => sum + r.ok, 0),
      failed: registered.reduce((sum, r) => sum + r.failed, 0),
      retransmissions: registered.reduce((sum, r) => sum + r.retransmissions, 0),
      seconds: Math.max(0, ...registered.map((r) => r.seconds)),
      codes: mergeCounts(registered.map((r) => r.codes)),
    };
    console.log(`   ${k(registration.ok)} registered in ${registration.seconds.toFixed(1)} s (${k(registration.ok / Math.max(registration.seconds, 0.001))}/s), ${k(registration.failed)} failed${describeCounts(registration.codes)}, ${k(registration.retransmissions)} retransmissions`);
    const afterLwm2m = await sample(`${k(registration.ok)} LwM2M devices registered`, registration.ok, { devices: registration.ok, fromRss: afterEndpoints });

    // 3. MQTT devices log in.
    console.log(`connecting ${k(MQTT_DEVICES)} MQTT devices (${mqttProcesses} processes, ${CONNECT_WINDOW} CONNECTs in flight)…`);
    const connectFrom = new Date(Date.now() - 1000).toISOString();
    const mqtt = Array.from({ length: mqttProcesses }, (_, p) => {
      const settings: MqttLoadSettings = { port: started.ports.mqtt!, credentials, devices: MQTT_DEVICES, process: p, processes: mqttProcesses, sources, window: WINDOW, rate: RATE, connectWindow: Math.max(1, Math.ceil(CONNECT_WINDOW / mqttProcesses)), connectLimitMs: CONNECT_LIMIT_MS };
      return new Generator(`MQTT devices ${p + 1}/${mqttProcesses}`, 'scale-mqtt-load', settings);
    });
    generators.push(...mqtt);
    const connectedReports = await Promise.all(mqtt.map((g) => g.next('connected', CONNECT_LIMIT_MS + 60_000)));
    const connection = {
      ok: connectedReports.reduce((sum, r) => sum + r.ok, 0),
      failed: connectedReports.reduce((sum, r) => sum + r.failed, 0),
      attempts: connectedReports.reduce((sum, r) => sum + r.attempts, 0),
      seconds: Math.max(0, ...connectedReports.map((r) => r.seconds)),
      refusals: mergeCounts(connectedReports.map((r) => r.refusals)),
    };
    console.log(`   ${k(connection.ok)} connected in ${connection.seconds.toFixed(1)} s (${k(connection.ok / Math.max(connection.seconds, 0.001))}/s), ${k(connection.failed)} failed, ${k(connection.attempts)} attempts${describeCounts(connection.refusals)}`);
    const held = registration.ok + connection.ok;
    const afterMqtt = await sample(`${k(held)} devices held`, held, { devices: connection.ok, fromRss: afterLwm2m });

    // 4. Publishing: every MQTT device at BENCH_RATE for SECONDS, then the drain.
    console.log(`publishing: ${k(offeredRate)} msg/s offered for ${SECONDS} s (then up to ${DRAIN_SECONDS} s for the last PUBACKs)…`);
    const startAt = Date.now() + 2000;
    for (const g of mqtt) g.send({ cmd: 'publish', startAt, seconds: SECONDS, drainMs: DRAIN_SECONDS * 1000 });
    const generatorPids = generators.map((g) => g.child.process.pid);
    const generatorCpu = () => generatorPids.reduce<number>((sum, p) => sum + cpuSeconds(p), 0);
    let cpuAtStart = { service: 0, generators: 0, machine: machineCpu() };
    let cpuAtEnd = cpuAtStart;
    let peakDuringPublishing = 0;
    let gcAtStart: ServiceGauges | undefined;
    let gcAtEnd: ServiceGauges | undefined;
    const states = new Map<string, number>();
    const stateSampler = setInterval(() => {
      if (Date.now() < startAt || Date.now() > startAt + SECONDS * 1000) return;
      const state = threadState(pid);
      states.set(state, (states.get(state) ?? 0) + 1);
    }, 100).unref();
    const sampler = (async () => {
      await sleep(startAt - Date.now());
      cpuAtStart = { service: cpuSeconds(pid), generators: generatorCpu(), machine: machineCpu() };
      gcAtStart = await gauges();
      let last = { acked: 0, gc: gcAtStart, second: 0 };
      for (let second = 1; second <= SECONDS; second++) {
        await sleep(startAt + second * 1000 - Date.now());
        peakDuringPublishing = Math.max(peakDuringPublishing, memory(pid).rss);
        if (second % 5 !== 0 && second !== SECONDS) continue;
        const progress = mqtt.map((g) => g.latest).filter((p): p is MqttProgress => p !== undefined);
        const sum = (pick: (p: MqttProgress) => number) => progress.reduce((total, p) => total + pick(p), 0);
        const acked = sum((p) => p.acked);
        const now = await gauges();
        const gc = now && last.gc ? `, GC ${(now.gcSeconds - last.gc.gcSeconds).toFixed(1)} s (major ${(now.gcMajorSeconds - last.gc.gcMajorSeconds).toFixed(1)} s), event loop delay ≤ ${ms(now.loopDelayMax * 1000)}` : '';
        console.log(
          `   ${String(second).padStart(4)} s: offered ${k(sum((p) => p.offered))}, sent ${k(sum((p) => p.sent))}, PUBACKed ${k(acked)} (${k((acked - last.acked) / (second - last.second))}/s lately), ` +
            `skipped ${k(sum((p) => p.skippedWindowFull + p.skippedClosed))}, closed ${k(sum((p) => p.closed))}; service RSS ${mib(memory(pid).rss)}, ${describeGauges(now)}${gc}`,
        );
        last = { acked, gc: now, second };
      }
      cpuAtEnd = { service: cpuSeconds(pid), generators: generatorCpu(), machine: machineCpu() };
      gcAtEnd = await gauges();
    })();
    // Awaited below; when publishing fails first (the service gone), its failure is that one, not this.
    sampler.catch(() => undefined);
    const published = await Promise.all(mqtt.map((g) => g.next('published', (SECONDS + DRAIN_SECONDS + 120) * 1000)));
    await sampler;
    clearInterval(stateSampler);
    const total = (pick: (p: (typeof published)[number]) => number) => published.reduce((sum, p) => sum + pick(p), 0);
    const latency = new Histogram();
    const lag = new Histogram();
    for (const p of published) {
      latency.merge(p.latency);
      lag.merge(p.lag);
    }
    const acked = total((p) => p.acked);

    // 5. What the service stored and still holds.
    const stored = (await api<{ total: number }>('GET', `/history/counts?type=mqtt-publish&serviceId=${mqttService}&from=${connectFrom}&to=${new Date(Date.now() + 1000).toISOString()}&interval=86400`)).total;
    const connectedCount = async (serviceId: string) => (await api<{ count: number }>('GET', `/endpoint/count?serviceId=${serviceId}&state=connected`)).count;
    const heldLwm2m = await connectedCount(lwm2mService);
    const heldMqtt = await connectedCount(mqttService);
    const statuses = await Promise.all(lwm2m.map((g) => (g.send({ cmd: 'status' }), g.next('status', 30_000))));
    const stillRegistered = statuses.reduce((sum, s) => sum + s.registered, 0);
    const updates = statuses.reduce((sum, s) => sum + s.updates, 0);
    const updateFailures = statuses.reduce((sum, s) => sum + s.updateFailures, 0);
    await sample('end of publishing', held);
    const peak = Math.max(memory(pid).peak, peakDuringPublishing);

    // The tables.
    const lost = Math.max(0, acked - stored);
    const publishCores = (cpuAtEnd.service - cpuAtStart.service) / SECONDS;
    const generatorCores = (cpuAtEnd.generators - cpuAtStart.generators) / SECONDS;
    console.log(`\n## IoT Bridge at scale: ${k(LWM2M_DEVICES)} LwM2M + ${k(MQTT_DEVICES)} MQTT devices, one service process (SQLite), ${cpus().length} cores, Node ${process.version}\n`);
    console.log('| service RSS, once idle | devices held | RSS | per 1,000 devices held | added per 1,000 devices of the phase | V8 heap used | external memory |');
    console.log('|---|---|---|---|---|---|---|');
    const perThousand = (bytes: number, devices: number) => `${((bytes / 2 ** 20 / devices) * 1000).toFixed(devices >= 10_000 ? 2 : 1)} MiB`;
    for (const point of rssPoints) {
      const perHeld = point.devices > 0 ? perThousand(point.rss, point.devices) : '–';
      const perAdded = point.added && point.added.devices > 0 ? perThousand(point.rss - point.added.fromRss, point.added.devices) : '–';
      console.log(`| ${point.label} | ${k(point.devices)} | ${mib(point.rss)} | ${perHeld} | ${perAdded} | ${point.gauges ? mib(point.gauges.heapUsed) : '–'} | ${point.gauges ? mib(point.gauges.external) : '–'} |`);
    }
    console.log(`| peak (VmHWM) | ${k(held)} | ${mib(peak)} | ${held > 0 ? perThousand(peak, held) : '–'} | | | |`);
    console.log('');
    console.log('| measure | value |');
    console.log('|---|---|');
    console.log(`| held in < 2 GB RSS | ${peak < RSS_TARGET ? 'yes' : '**no**'}: peak ${mib(peak)} (2 GB = ${mib(RSS_TARGET)}); ${mib(afterMqtt)} with every device in, before publishing |`);
    console.log(`| endpoints created (POST /endpoints/bulk) | ${k(LWM2M_DEVICES + MQTT_DEVICES)} in ${provisionSeconds.toFixed(1)} s (${k((LWM2M_DEVICES + MQTT_DEVICES) / provisionSeconds)}/s) |`);
    console.log(`| LwM2M devices registered | ${k(registration.ok)} of ${k(LWM2M_DEVICES)} in ${registration.seconds.toFixed(1)} s (${k(registration.ok / Math.max(registration.seconds, 0.001))}/s); ${k(registration.failed)} failed${describeCounts(registration.codes)} |`);
    console.log(`| MQTT devices connected | ${k(connection.ok)} of ${k(MQTT_DEVICES)} in ${connection.seconds.toFixed(1)} s (${k(connection.ok / Math.max(connection.seconds, 0.001))}/s); ${k(connection.failed)} failed, ${k(connection.attempts - connection.ok)} retried${describeCounts(connection.refusals)} |`);
    console.log(`| held at the end (the service's connected endpoints) | LwM2M ${k(heldLwm2m)} (the devices: ${k(stillRegistered)} registered, ${k(updates)} Updates, ${k(updateFailures)} failed), MQTT ${k(heldMqtt)} (${k(total((p) => p.closed))} connections closed) |`);
    console.log(`| publish rate offered | ${k(offeredRate)} msg/s (${k(MQTT_DEVICES)} devices × ${RATE}/s for ${SECONDS} s = ${k(total((p) => p.offered))}) |`);
    console.log(`| published (sent) | ${k(total((p) => p.sent))} = ${k(total((p) => p.sent) / SECONDS)} msg/s; skipped: ${k(total((p) => p.skippedWindowFull))} with ${WINDOW} un-acked (window full), ${k(total((p) => p.skippedClosed))} on closed connections |`);
    console.log(`| PUBACKed | ${k(total((p) => p.ackedInSchedule))} within the ${SECONDS} s = **${k(total((p) => p.ackedInSchedule) / SECONDS)} msg/s**; ${k(acked)} in all, the last ${Math.max(0, ...published.map((p) => p.seconds)).toFixed(1)} s after the start |`);
    console.log(`| publish → PUBACK p50 / p99 (every PUBACKed message) | ${ms(latency.percentile(50))} / **${ms(latency.percentile(99))}** (max ${ms(latency.percentile(100))}) |`);
    console.log(`| sent, never PUBACKed (drain ${DRAIN_SECONDS} s) | ${k(total((p) => p.unacked))} |`);
    console.log(`| stored \`mqtt-publish\` events (GET /history/counts) | ${k(stored)} |`);
    console.log(`| **lost** (PUBACKed − stored) | **${k(lost)}** |`);
    const machine = { busy: cpuAtEnd.machine.busy - cpuAtStart.machine.busy, idle: cpuAtEnd.machine.idle - cpuAtStart.machine.idle, iowait: cpuAtEnd.machine.iowait - cpuAtStart.machine.iowait, steal: cpuAtEnd.machine.steal - cpuAtStart.machine.steal };
    const ticks = Math.max(1, machine.busy + machine.idle + machine.iowait + machine.steal);
    const percent = (part: number) => `${Math.round((part / ticks) * 100)} %`;
    // Whatever else ran on the machine meanwhile (this orchestrator included) took the rest of the busy time.
    const otherCores = (machine.busy / ticks) * cpus().length - publishCores - generatorCores;
    console.log(
      `| CPU while publishing (${cpus().length} cores) | service ${publishCores.toFixed(2)} cores, load generators ${generatorCores.toFixed(2)}, everything else ${Math.max(0, otherCores).toFixed(2)}; ` +
        `the machine busy ${percent(machine.busy)}, idle ${percent(machine.idle)}, I/O wait ${percent(machine.iowait)}, stolen by the VM host ${percent(machine.steal)} |`,
    );
    const sampled = [...states.values()].reduce((sum, n) => sum + n, 0);
    const share = (state: string) => `${Math.round(((states.get(state) ?? 0) / Math.max(1, sampled)) * 100)} %`;
    console.log(`| the service's main thread while publishing (sampled at 10 Hz) | running ${share('R')}, sleeping (idle or waiting) ${share('S')}, waiting for the disk ${share('D')} |`);
    if (gcAtStart && gcAtEnd) console.log(`| the service's garbage collection while publishing | ${(gcAtEnd.gcSeconds - gcAtStart.gcSeconds).toFixed(1)} s in ${SECONDS} s, of which major (mark-compact) ${(gcAtEnd.gcMajorSeconds - gcAtStart.gcMajorSeconds).toFixed(1)} s |`);
    console.log(`| load generators' lateness against the schedule, p50 / p99 | ${ms(lag.percentile(50))} / ${ms(lag.percentile(99))} |`);
    const strays = total((p) => p.strayAcks);
    if (strays > 0) console.log(`\n!! ${k(strays)} PUBACKs for no publish in flight`);
    if (total((p) => p.sent) < total((p) => p.offered)) {
      console.log(`\n!! offered ${k(offeredRate)} msg/s; the service acknowledged ${k(total((p) => p.ackedInSchedule) / SECONDS)} msg/s: the devices' windows filled and ${k(total((p) => p.skippedWindowFull + p.skippedClosed))} publishes were not sent`);
    }
    if (peak >= RSS_TARGET) console.log(`!! the service's RSS went over 2 GB (peak ${mib(peak)})`);
    if (lost > 0 || registration.failed > 0 || connection.failed > 0 || heldLwm2m < registration.ok || heldMqtt < connection.ok) process.exitCode = 1;
  } finally {
    await Promise.all(generators.map((g) => g.child.stop()));
    await service?.stop(30_000);
  }
}

/** Creates the LwM2M endpoints and the MQTT ones (with generated secrets) → the MQTT devices' passwords by index. */
async function provision(api: <T>(method: string, url: string, body?: unknown) => Promise<T>, lwm2mService: string, mqttService: string): Promise<string[]> {
  interface BulkAnswer {
    readonly failed: number;
    readonly items: readonly { status: number; endpoint?: { credentials?: { password?: string } }; error?: unknown }[];
  }
  const passwords: string[] = new Array<string>(MQTT_DEVICES);
  const batches: { prefix: string; serviceId: string; first: number; size: number; mqtt: boolean }[] = [];
  for (let first = 0; first < LWM2M_DEVICES; first += BULK_SIZE) batches.push({ prefix: LWM2M_PREFIX, serviceId: lwm2mService, first, size: Math.min(BULK_SIZE, LWM2M_DEVICES - first), mqtt: false });
  for (let first = 0; first < MQTT_DEVICES; first += BULK_SIZE) batches.push({ prefix: MQTT_PREFIX, serviceId: mqttService, first, size: Math.min(BULK_SIZE, MQTT_DEVICES - first), mqtt: true });
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: BULK_CONCURRENCY }, async () => {
      while (next < batches.length) {
        const batch = batches[next++]!;
        const items = Array.from({ length: batch.size }, (_, j) => ({ key: `${batch.prefix}${batch.first + j}`, serviceId: batch.serviceId, ...(batch.mqtt && { credentials: { generate: true } }) }));
        const answer = await api<BulkAnswer>('POST', '/endpoints/bulk', { items });
        if (answer.failed > 0) throw new Error(`POST /endpoints/bulk: ${answer.failed} failed, e.g. ${JSON.stringify(answer.items.find((item) => item.status !== 201))}`);
        if (batch.mqtt) {
          for (const [j, item] of answer.items.entries()) {
            const password = item.endpoint?.credentials?.password;
            if (password === undefined) throw new Error(`POST /endpoints/bulk: no generated password for ${items[j]!.key}`);
            passwords[batch.first + j] = password;
          }
        }
        if (++done % Math.max(1, Math.round(batches.length / 10)) === 0) console.log(`   ${done} of ${batches.length} requests`);
      }
    }),
  );
  return passwords;
}

function mergeCounts(all: readonly Record<string, number>[]): Record<string, number> {
  const merged: Record<string, number> = {};
  for (const counts of all) for (const [key, count] of Object.entries(counts)) merged[key] = (merged[key] ?? 0) + count;
  return merged;
}

/** `(4.03 × 2, timeout × 1)`, or nothing when there are none. */
function describeCounts(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? '' : ` (${entries.map(([key, count]) => `${key} × ${k(count)}`).join(', ')})`;
}

try {
  await main();
} catch (error) {
  if (!(error instanceof SetupError)) throw error;
  console.error(`!! ${error.message}`);
  process.exitCode = 1;
}
