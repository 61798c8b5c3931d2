/**
 * bench/mqtt.ts's figures and their report: what one storage dialect's parts of the run add up to (the service's
 * rounds and each reference's beside them), printed as one table per dialect, and PostgreSQL's share of SQLite's
 * from rounds taken in turns.
 */
import { cpus } from 'node:os';
import { CpuPerMessage, duplicateFinishes, FINISH_WINDOW, MESSAGES, RATE, WINDOW, type Latency } from './mqtt-load.js';

/** A reference broker, measured beside the service in the same run. */
export interface Reference {
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

/** The storage a part of the run uses: SQLite in its data directory, or a PostgreSQL database. */
export interface Dialect {
  readonly name: 'SQLite' | 'PostgreSQL';
  readonly postgres?: boolean;
}

/** One broker's rounds over the run: rates (one per round), latencies, CPU per message. */
export interface BrokerTally {
  readonly ack: number[];
  /** A reference's PUBACK rate while its subscriber receives every message (issue 23's reference). */
  readonly ackDelivering: number[];
  readonly finished: number[];
  readonly latency: Latency[];
  readonly cpuAck: CpuPerMessage;
  readonly cpuAckDelivering: CpuPerMessage;
  readonly cpuFinished: CpuPerMessage;
}

/** A reference's rounds beside one dialect's service. */
export interface ReferenceTally extends BrokerTally {
  readonly reference: Reference;
  /** It answered in at least one part (a broker given by URL may not). */
  answered: boolean;
  /** Kinds of round left out after the bench's attempts stalled, for the rest of the run. */
  readonly failedKinds: Set<string>;
}

/** One dialect's figures over its parts of the run (a fresh service, database and devices each). */
export interface DialectTally {
  readonly dialect: Dialect;
  /** The service's process in the part under way: its CPU is read from /proc. */
  servicePid: number | undefined;
  readonly bridge: BrokerTally;
  readonly databaseAck: CpuPerMessage;
  readonly databaseFinished: CpuPerMessage;
  /** This process: the devices' clients and, in the finished rounds, the service's reports. It shares the two cores. */
  readonly loadAck: CpuPerMessage;
  readonly loadFinished: CpuPerMessage;
  readonly references: ReferenceTally[];
  executions: number;
  triggered: number;
  failedExecutions: number;
  setupSeconds: number;
  passwordSeconds: number;
  loginSeconds: number;
  measureSeconds: number;
  readonly incidents: string[];
  readonly referenceFailures: string[];
  serviceWarnings: number;
}

/** `readFinished`: the CPU read in finished rounds, when more than `read`'s (the service's script workers). */
function brokerTally(read: () => number | undefined, readFinished = read): BrokerTally {
  return { ack: [], ackDelivering: [], finished: [], latency: [], cpuAck: new CpuPerMessage(read), cpuAckDelivering: new CpuPerMessage(read), cpuFinished: new CpuPerMessage(readFinished) };
}

export function dialectTally(
  dialect: Dialect,
  references: readonly Reference[],
  cpu: { ofProcess: (pid: number | undefined) => number | undefined; ofServiceAndWorkers: (pid: number | undefined) => number | undefined; ofDatabase: () => number | undefined; ofThisProcess: () => number },
): DialectTally {
  const tally: DialectTally = {
    dialect,
    servicePid: undefined,
    bridge: brokerTally(
      () => cpu.ofProcess(tally.servicePid),
      () => cpu.ofServiceAndWorkers(tally.servicePid),
    ),
    databaseAck: new CpuPerMessage(cpu.ofDatabase),
    databaseFinished: new CpuPerMessage(cpu.ofDatabase),
    loadAck: new CpuPerMessage(cpu.ofThisProcess),
    loadFinished: new CpuPerMessage(cpu.ofThisProcess),
    references: references.map((reference) => ({ reference, answered: false, failedKinds: new Set(), ...brokerTally(() => cpu.ofProcess(reference.pid)) })),
    executions: 0,
    triggered: 0,
    failedExecutions: 0,
    setupSeconds: 0,
    passwordSeconds: 0,
    loginSeconds: 0,
    measureSeconds: 0,
    incidents: [],
    referenceFailures: [],
    serviceWarnings: 0,
  };
  return tally;
}

export const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One dialect's table and the lines under it; sets a failing exit code when a trigger run went missing or failed. */
export function report(tally: DialectTally, options: { devices: number; runs: number; parts: number }): void {
  const { bridge, references } = tally;
  const rounds = options.runs;
  const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US')} msg/s`;
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  const ratio = (bridgeValue: number, referenceValues: number[]) => (referenceValues.length === rounds ? (bridgeValue / median(referenceValues)).toFixed(2) : '–');
  const refCell = (values: number[], show: (n: number) => string) => (values.length === rounds ? show(median(values)) : '–');
  const answered = references.filter((ref) => ref.answered);
  const parts = options.parts > 1 ? ` in ${options.parts} parts taken in turns with the other dialect's (a fresh service and devices each)` : '';
  console.log(
    `# IoT Bridge MQTT: ${cpus().length} cores, Node ${process.version}, ${tally.dialect.name}, the service in its own process, ${options.devices} devices (mqtt.js, MQTT 3.1.1, QoS 1, in the benchmark's process), ` +
      `${MESSAGES} messages per round, in flight per device ≤${WINDOW} un-acked (≤${FINISH_WINDOW} unfinished when saturating to finished), median of ${rounds} runs${parts}; ` +
      `${answered.length > 1 ? 'references' : 'reference'}: ${answered.map((ref) => ref.reference.label).join('; ') || 'none'}\n`,
  );
  console.log(`| measure | IoT Bridge |${references.map((ref) => ` ${ref.reference.name} (reference) | ratio bridge/${ref.reference.short} |`).join('')}`);
  console.log(`|---|---|${'---|---|'.repeat(references.length)}`);
  const row = (measure: string, bridgeValue: number, show: (n: number) => string, figuresOf: (ref: BrokerTally) => number[]) =>
    console.log(`| ${measure} | ${show(bridgeValue)} |${references.map((ref) => ` ${refCell(figuresOf(ref), show)} | ${ratio(bridgeValue, figuresOf(ref))} |`).join('')}`);
  row('publish → PUBACK, saturated, every message delivered (no trigger, the bus to a consumer / a subscriber; issue 23 target ≥ 1.0)', median(bridge.ack), fmt, (ref) => ref.ackDelivering);
  row('publish → PUBACK, saturated, a reference delivering nothing (no subscriber: stricter than issue 23)', median(bridge.ack), fmt, (ref) => ref.ack);
  row('publish → trigger finished / subscriber received, saturated (target ≥ 0.7)', median(bridge.finished), fmt, (ref) => ref.finished);
  row(`latency publish → finished at ${RATE} msg/s, p50`, median(bridge.latency.map((l) => l.p50)), ms, (ref) => ref.latency.map((l) => l.p50));
  row(`latency publish → finished at ${RATE} msg/s, p99`, median(bridge.latency.map((l) => l.p99)), ms, (ref) => ref.latency.map((l) => l.p99));
  console.log('');
  const list = (values: number[], show: (n: number) => string) => (values.length > 0 ? values.map(show).join(', ') : '–');
  const k = (n: number) => Math.round(n).toLocaleString('en-US');
  // Names padded to one width, so that the figures line up.
  const runs = (name: string, figures: BrokerTally, delivering: boolean) =>
    console.log(
      `runs, ${`${name}:`.padEnd(11)} PUBACK ${list(figures.ack, k)}${delivering ? ` (with a subscriber ${list(figures.ackDelivering, k)})` : ''}; finished ${list(figures.finished, k)} msg/s; ` +
        `p50/p99 ${figures.latency.map((l) => `${l.p50.toFixed(1)}/${l.p99.toFixed(1)}`).join(', ')} ms`,
    );
  runs('IoT Bridge', bridge, false);
  for (const ref of answered) runs(ref.reference.name, ref, true);
  const micros = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(1)} µs`);
  const cpuRatio = (bridgeValue: number | undefined, referenceValue: number | undefined) =>
    bridgeValue === undefined || referenceValue === undefined ? '' : ` (${(bridgeValue / referenceValue).toFixed(1)}×)`;
  const referencesCpu = (bridgeValue: number | undefined, cpuOf: (ref: BrokerTally) => CpuPerMessage) =>
    answered.map((ref) => `, ${micros(cpuOf(ref).micros())} ${ref.reference.name}${cpuRatio(bridgeValue, cpuOf(ref).micros())}`).join('');
  console.log(
    `CPU per message, measured saturated rounds: PUBACK ${micros(bridge.cpuAck.micros())} the service${referencesCpu(bridge.cpuAck.micros(), (ref) => ref.cpuAck)}` +
      `${answered.length > 0 ? ` (with a subscriber${referencesCpu(bridge.cpuAck.micros(), (ref) => ref.cpuAckDelivering).slice(1)})` : ''}; ` +
      `finished ${micros(bridge.cpuFinished.micros())} the service with its script workers${referencesCpu(bridge.cpuFinished.micros(), (ref) => ref.cpuFinished)}`,
  );
  console.log(`CPU per message of the load generator (this process: the devices' clients, and the service's reports when finishing): PUBACK ${micros(tally.loadAck.micros())}; finished ${micros(tally.loadFinished.micros())}`);
  if (tally.databaseAck.micros() !== undefined) {
    console.log(`CPU per message of PostgreSQL (every postgres process on this machine): PUBACK ${micros(tally.databaseAck.micros())}; finished ${micros(tally.databaseFinished.micros())}`);
  }
  console.log(
    `trigger executions recorded: ${tally.executions} of ${tally.triggered} expected, ${tally.failedExecutions} failed; set-up ${tally.setupSeconds.toFixed(1)} s ` +
      `(passwords ${tally.passwordSeconds.toFixed(1)} s, log-ins ${tally.loginSeconds.toFixed(1)} s), measuring ${tally.measureSeconds.toFixed(1)} s`,
  );
  if (tally.incidents.length > 0) console.log(`!! ${tally.incidents.length} connection incidents: ${tally.incidents.slice(0, 5).join('; ')}`);
  for (const failure of tally.referenceFailures) console.log(`!! reference round stalled: ${failure}`);
  if (duplicateFinishes() > 0) console.log(`!! ${duplicateFinishes()} messages finished twice (QoS 1 redelivery)`);
  if (tally.serviceWarnings > 0) console.log(`!! the service logged ${tally.serviceWarnings} warnings/errors (on stderr)`);
  if (tally.executions !== tally.triggered || tally.failedExecutions > 0) process.exitCode = 1;
}

/**
 * PostgreSQL's rates as a share of SQLite's. The parts were taken in turns (SQLite, PostgreSQL; PostgreSQL, SQLite; …),
 * so each PostgreSQL round has a SQLite round of the same kind next to it in time: on a machine whose speed moves
 * within minutes, the share of each pair is read, and their median given, beside the share of the two medians.
 */
export function reportShare(sqlite: DialectTally, postgres: DialectTally): void {
  const share = (ours: number[], theirs: number[]) => {
    const pairs = ours.map((value, i) => value / theirs[i]!);
    return `${(median(ours) / median(theirs)).toFixed(2)} (of the pairs of rounds next to each other: median ${median(pairs).toFixed(2)}; ${pairs.map((p) => p.toFixed(2)).join(', ')})`;
  };
  if (sqlite.bridge.ack.length !== postgres.bridge.ack.length || sqlite.bridge.finished.length !== postgres.bridge.finished.length) return;
  console.log(`\nPostgreSQL / SQLite (target ≥ 0.8): PUBACK ${share(postgres.bridge.ack, sqlite.bridge.ack)}; finished ${share(postgres.bridge.finished, sqlite.bridge.finished)}`);
}
