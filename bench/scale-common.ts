/**
 * What bench/scale.ts and its load generators (bench/scale-mqtt-load.ts, bench/scale-lwm2m-load.ts) share: the
 * settings a generator is started with (one JSON argument), the commands it reads on stdin and the reports it
 * writes on stdout (one JSON object a line each), and the latency histogram the MQTT generators report, so the
 * orchestrator can merge them and take percentiles over all processes.
 *
 * Devices are dealt to the generator processes round-robin: process p of P holds the global device indices
 * p, p + P, p + 2P, … Each device binds the loopback source address `sources[index % sources.length]`.
 */

export interface MqttLoadSettings {
  readonly port: number;
  /** A file of `key<TAB>password` lines, line i for device i (all devices, every process reads its own lines). */
  readonly credentials: string;
  /** MQTT devices over all processes. */
  readonly devices: number;
  readonly process: number;
  readonly processes: number;
  readonly sources: readonly string[];
  /** Un-acked QoS 1 publishes a device may have; a publish due while its window is full is skipped (counted). */
  readonly window: number;
  /** Publishes per device per second. */
  readonly rate: number;
  /** CONNECTs in flight at once in this process. */
  readonly connectWindow: number;
  /** Devices not in by then are reported as failed. */
  readonly connectLimitMs: number;
}

export interface Lwm2mLoadSettings {
  readonly port: number;
  readonly keyPrefix: string;
  readonly devices: number;
  readonly process: number;
  readonly processes: number;
  readonly sources: readonly string[];
  /** Registration lifetime (s); a device sends an Update before 80 % of it has passed. */
  readonly lifetime: number;
  /** Registers (and Updates) in flight at once in this process. */
  readonly window: number;
  /** Devices not registered by then are reported as failed. */
  readonly registerLimitMs: number;
}

/** Commands on a generator's stdin. */
export type LoadCommand =
  /** MQTT: every device publishes `rate` a second from `startAt` (epoch ms) for `seconds`, then waits up to `drainMs` for the last PUBACKs. */
  | { readonly cmd: 'publish'; readonly startAt: number; readonly seconds: number; readonly drainMs: number }
  /** LwM2M: report how the devices are doing. */
  | { readonly cmd: 'status' };

export interface MqttConnected {
  readonly kind: 'connected';
  readonly ok: number;
  readonly failed: number;
  readonly attempts: number;
  /** Refusals and failures by CONNACK code, `error` (connection failed or closed) or `timeout`. */
  readonly refusals: Record<string, number>;
  readonly seconds: number;
}

export interface MqttCounts {
  /** Publishes due by the schedule. */
  readonly offered: number;
  readonly sent: number;
  /** Due while the device had `window` publishes un-acked: not sent, as a device with a full window would not. */
  readonly skippedWindowFull: number;
  /** Due on a connection that had closed. */
  readonly skippedClosed: number;
  readonly acked: number;
  /** Of those, acknowledged while the schedule ran (not in the drain after it). */
  readonly ackedInSchedule: number;
  /** Connections that closed after log-in. */
  readonly closed: number;
  /** PUBACKs for no publish in flight (should stay 0). */
  readonly strayAcks: number;
}

export interface MqttProgress extends MqttCounts {
  readonly kind: 'progress';
}

export interface MqttPublished extends MqttCounts {
  readonly kind: 'published';
  /** Sent and never acknowledged by the end of the drain. */
  readonly unacked: number;
  /** Publish → PUBACK, ms ({@link Histogram.toJSON}). */
  readonly latency: Record<string, number>;
  /** How late publishes went out against their schedule, ms: the generator's own lag. */
  readonly lag: Record<string, number>;
  /** From the first scheduled publish to the last PUBACK (or the end of the drain). */
  readonly seconds: number;
}

export interface Lwm2mRegistered {
  readonly kind: 'registered';
  readonly ok: number;
  readonly failed: number;
  /** Final answers other than 2.01, and `timeout` / `reset`. */
  readonly codes: Record<string, number>;
  readonly retransmissions: number;
  readonly seconds: number;
}

export interface Lwm2mStatus {
  readonly kind: 'status';
  readonly registered: number;
  readonly updates: number;
  readonly updateFailures: number;
  /** Requests the service sent to the devices (answered 4.04: the bench's devices have no objects to serve). */
  readonly requestsAnswered: number;
}

export type LoadReport = MqttConnected | MqttProgress | MqttPublished | Lwm2mRegistered | Lwm2mStatus;

/** Global device indices held by generator process `process` of `processes`. */
export function devicesOf(devices: number, process: number, processes: number): number[] {
  const held: number[] = [];
  for (let index = process; index < devices; index += processes) held.push(index);
  return held;
}

const BASE_MS = 0.01;
const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);
/** 0.01 ms … ~70 min in 1 % steps. */
const BUCKETS = 2000;

/**
 * Latencies in logarithmic buckets 1 % wide: constant memory for millions of samples, mergeable over processes,
 * percentiles within 1 %.
 */
export class Histogram {
  readonly counts = new Float64Array(BUCKETS);
  total = 0;

  add(ms: number): void {
    const bucket = ms <= BASE_MS ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(ms / BASE_MS) / LOG_GROWTH));
    this.counts[bucket]!++;
    this.total++;
  }

  /** The non-empty buckets, `{index: count}`. */
  toJSON(): Record<string, number> {
    const sparse: Record<string, number> = {};
    this.counts.forEach((count, bucket) => {
      if (count > 0) sparse[bucket] = count;
    });
    return sparse;
  }

  merge(sparse: Record<string, number>): void {
    for (const [bucket, count] of Object.entries(sparse)) {
      this.counts[Number(bucket)]! += count;
      this.total += count;
    }
  }

  /** The upper bound of the bucket holding the p-th percentile (ms); undefined without samples. */
  percentile(p: number): number | undefined {
    if (this.total === 0) return undefined;
    const rank = Math.ceil((p / 100) * this.total);
    let seen = 0;
    for (let bucket = 0; bucket < BUCKETS; bucket++) {
      seen += this.counts[bucket]!;
      if (seen >= rank) return BASE_MS * GROWTH ** bucket;
    }
    return BASE_MS * GROWTH ** (BUCKETS - 1);
  }
}

/** Reads JSON commands from stdin, one a line; `onEnd` when stdin closes (the orchestrator went away). */
export function readCommands(onCommand: (command: LoadCommand) => void, onEnd: () => void): void {
  let partial = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop()!;
    for (const line of lines) if (line.trim() !== '') onCommand(JSON.parse(line) as LoadCommand);
  });
  process.stdin.on('end', onEnd);
  process.stdin.on('close', onEnd);
}

export function report(message: LoadReport): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}
