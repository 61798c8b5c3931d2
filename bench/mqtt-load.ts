/**
 * The load generator of bench/mqtt.ts: its mqtt.js devices (in the benchmark's process) publish QoS 1 to a
 * broker under test, the service or a reference (a `Target`), in saturated rounds (publish → PUBACK, publish →
 * finished) and paced ones (publish → finished latency), and the CPU a broker's process spends per message is
 * counted. The load's knobs are read here; bench/mqtt.ts's header documents them with the others.
 */
import mqtt, { type MqttClient } from 'mqtt';

/** Messages per saturated round: a round of a few seconds measures the sustained rate, not filling and draining. */
export const MESSAGES = Number(process.env.BENCH_MQTT_MESSAGES ?? 20_000);
/** Un-acked QoS 1 publishes each device keeps in flight. */
export const WINDOW = Number(process.env.BENCH_MQTT_WINDOW ?? 10);
/**
 * Unfinished publishes each device keeps in flight when saturating to "finished". A Mosquitto with its
 * default max_queued_messages (1000) dropped QoS 1 messages for the subscriber with 10 per device (1000
 * outstanding) in every round here, and with 5 (500) in most rounds; the bench's own Mosquitto has no such
 * limit, and the default stays at 3 × 100 so that figures compare with earlier runs (and with a broker given
 * as BENCH_MQTT_REFERENCE).
 */
export const FINISH_WINDOW = Number(process.env.BENCH_MQTT_FINISH_WINDOW ?? 3);
/** Offered rate of the latency rounds: well under saturation, so latency is the pipeline's, not a queue's. */
export const RATE = Number(process.env.BENCH_MQTT_RATE ?? 500);
export const PACED_SECONDS = Number(process.env.BENCH_MQTT_PACED_SECONDS ?? 3);

/** Clients closed on purpose before the end. */
const retired = new WeakSet<MqttClient>();
/** Messages that finished twice (a QoS 1 message delivered again): reported, counted once. */
let duplicates = 0;

/** `client` is closed on purpose (a subscriber replaced, a part of the run over): its close is no incident. */
export function retire(client: MqttClient): void {
  retired.add(client);
}

/** Messages that finished twice so far. */
export function duplicateFinishes(): number {
  return duplicates;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

/** One round's messages: when each was published, acknowledged and finished (0: not yet). */
export class Round {
  readonly tag: string;
  readonly count: number;
  readonly publishedAt: Float64Array;
  readonly finishedAt: Float64Array;
  acked = 0;
  finished = 0;
  lastFinishAt = 0;
  /** Set when the round ended (or failed): its senders stop. */
  stopped = false;
  readonly allFinished: Promise<void>;
  #resolve: () => void = () => undefined;
  /** Whoever waits for one message to finish, by sequence number. */
  readonly #waiters = new Map<number, () => void>();

  constructor(tag: string, count: number) {
    this.tag = tag;
    this.count = count;
    this.publishedAt = new Float64Array(count);
    this.finishedAt = new Float64Array(count);
    this.allFinished = new Promise((resolve) => (this.#resolve = resolve));
  }

  finish(seq: number): void {
    if (!Number.isInteger(seq) || seq < 0 || seq >= this.count) return;
    if (this.finishedAt[seq] !== 0) {
      duplicates++;
      return;
    }
    this.lastFinishAt = this.finishedAt[seq] = performance.now();
    this.#waiters.get(seq)?.();
    this.#waiters.delete(seq);
    if (++this.finished === this.count) this.#resolve();
  }

  finishedOne(seq: number): Promise<void> {
    if (this.finishedAt[seq] !== 0) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.set(seq, resolve));
  }

  progress(): string {
    return `${this.acked}/${this.count} acked, ${this.finished}/${this.count} finished`;
  }
}

/** `work`, failed when neither acks nor finishes move for `stallMs`. */
async function watched<T>(round: Round, what: string, work: Promise<T>, stallMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_resolve, reject) => {
    let last = -1;
    let since = performance.now();
    timer = setInterval(() => {
      const now = round.acked + round.finished;
      if (now !== last) {
        last = now;
        since = performance.now();
      } else if (performance.now() - since > stallMs) {
        reject(new Error(`${what}: no progress for ${stallMs / 1000} s (${round.progress()})`));
      }
    }, 250);
  });
  try {
    return await Promise.race([work, stalled]);
  } finally {
    clearInterval(timer);
  }
}

/** A broker under test: its connected devices, the topic device `d` publishes on, and where finished messages are seen. */
export interface Target {
  readonly name: string;
  readonly clients: MqttClient[];
  /** Topic of a message that ends in "finished" (a trigger, a subscriber) / that only gets a PUBACK. */
  topic(device: number, tag: string, finishing: boolean): string;
  /** Set while a round runs: where the finish sink reports. */
  current: Round | undefined;
  /** How long a round may make no progress before it counts as stalled. */
  readonly stallMs: number;
  /** Called before a round whose messages finish (and before its clock starts). */
  readonly beforeFinishing?: () => Promise<void>;
  /** Connections closed or errors during the benchmark (should stay empty). */
  readonly incidents: string[];
}

export interface Saturated {
  readonly acked: number;
  readonly finished: number;
}

/**
 * MESSAGES QoS 1 messages round-robin over the devices, each device keeping WINDOW un-acked. `closedLoop`:
 * a message stays in its device's window (of FINISH_WINDOW) until it finished, not only until PUBACK.
 */
export async function saturated(target: Target, tag: string, finishing: boolean, waitFinished: boolean, closedLoop = false): Promise<Saturated> {
  if (finishing) await target.beforeFinishing?.();
  const round = new Round(tag, MESSAGES);
  target.current = round;
  const devices = target.clients.length;
  const started = performance.now();
  const publishing = Promise.all(
    target.clients.map(async (client, d) => {
      const topic = target.topic(d, tag, finishing);
      let next = d;
      await Promise.all(
        Array.from({ length: closedLoop ? FINISH_WINDOW : WINDOW }, async () => {
          while (next < MESSAGES && !round.stopped) {
            const seq = next;
            next += devices;
            round.publishedAt[seq] = performance.now();
            await client.publishAsync(topic, String(seq), { qos: 1 });
            round.acked++;
            if (closedLoop) await round.finishedOne(seq);
          }
        }),
      );
    }),
  );
  try {
    await watched(round, `${target.name} publish${closedLoop ? ' → finished' : ' → PUBACK'}`, publishing, target.stallMs);
    const ackedIn = (performance.now() - started) / 1000;
    // Also without a trigger, the bridge's events are let through the bus before the next round starts.
    if (waitFinished) await watched(round, `${target.name} publish → finished`, round.allFinished, target.stallMs);
    return { acked: MESSAGES / ackedIn, finished: waitFinished ? MESSAGES / ((round.lastFinishAt - started) / 1000) : NaN };
  } finally {
    round.stopped = true;
    publishing.catch(() => undefined);
    target.current = undefined;
  }
}

/**
 * CPU a process used per message over the measured saturated rounds (Linux /proc; none elsewhere): a per-message
 * cost that a busier or quieter machine moves less than it moves the throughput.
 */
export class CpuPerMessage {
  #seconds = 0;
  #messages = 0;
  readonly #read: () => number | undefined;

  constructor(read: () => number | undefined) {
    this.#read = read;
  }

  /** Runs a round of `messages` and counts what it cost (a round that fails counts nothing). */
  async measure<T>(messages: number, round: () => Promise<T>): Promise<T> {
    const before = this.#read();
    const result = await round();
    const after = this.#read();
    if (before !== undefined && after !== undefined) {
      this.#seconds += after - before;
      this.#messages += messages;
    }
    return result;
  }

  /** Undefined when nothing was measured, or less than /proc's resolution (10 ms) was used in all: a short round. */
  micros(): number | undefined {
    return this.#messages > 0 && this.#seconds > 0 ? (this.#seconds / this.#messages) * 1e6 : undefined;
  }
}

export interface Latency {
  readonly p50: number;
  readonly p99: number;
}

/** RATE messages per second for PACED_SECONDS (10 ms ticks), round-robin; publish → finished latency. */
export async function paced(target: Target, tag: string): Promise<Latency> {
  const count = Math.max(1, Math.round(RATE * PACED_SECONDS));
  await target.beforeFinishing?.();
  const round = new Round(tag, count);
  target.current = round;
  const devices = target.clients.length;
  const topics = target.clients.map((_, d) => target.topic(d, tag, true));
  const perTick = Math.max(1, Math.round(RATE / 100));
  const failures: Error[] = [];
  let sent = 0;
  const started = performance.now();
  try {
    const sending = (async () => {
      while (sent < count && !round.stopped) {
        const batch = Math.min(perTick, count - sent);
        for (let j = 0; j < batch; j++, sent++) {
          const seq = sent;
          round.publishedAt[seq] = performance.now();
          target.clients[seq % devices]!.publish(topics[seq % devices]!, String(seq), { qos: 1 }, (error) => (error ? failures.push(error) : round.acked++));
        }
        const next = started + (sent / RATE) * 1000;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
      }
    })();
    await watched(round, `${target.name} paced`, sending.then(() => round.allFinished), target.stallMs);
    if (failures.length > 0) throw new Error(`${target.name} paced: ${failures.length} publishes failed: ${failures[0]!.message}`);
    const latencies = Array.from(round.finishedAt, (at, seq) => at - round.publishedAt[seq]!).sort((a, b) => a - b);
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  } finally {
    round.stopped = true;
    target.current = undefined;
  }
}

export async function connect(url: string, options: mqtt.IClientOptions, incidents: string[], label: string): Promise<MqttClient> {
  const client = await mqtt.connectAsync(url, { protocolVersion: 4, clean: true, keepalive: 60, reconnectPeriod: 0, connectTimeout: 30_000, ...options });
  client.on('error', (error) => incidents.push(`${label}: error ${error.message}`));
  client.on('close', () => {
    if (!retired.has(client)) incidents.push(`${label}: connection closed`);
  });
  return client;
}

/** `count` tasks, `size` at a time. */
export async function batched(count: number, size: number, task: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i += size) await Promise.all(Array.from({ length: Math.min(size, count - i) }, (_, j) => task(i + j)));
}
