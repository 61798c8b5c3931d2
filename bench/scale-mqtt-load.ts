/**
 * MQTT load generator of bench/scale.ts, in a process of its own (several of them for a large fleet: each holds
 * one socket per device, and a process has a limited number of file descriptors). Raw MQTT 3.1.1 over TCP, the
 * packets written by hand and PUBACKs read without a parser object per connection, so that a device costs the
 * generator a socket and a few bytes, not a client library.
 *
 *   1. Logs its devices in (username = endpoint key, password = its generated secret, clean session, no
 *      keep-alive), `connectWindow` CONNECTs in flight, each from its loopback source address; a refused or
 *      failed device tries again after 1–2 s until `connectLimitMs`. Reports `connected`.
 *   2. On `publish`: every device publishes QoS 1 `rate` times a second, device i at (k + i / devices) / rate s
 *      after `startAt` (the fleet's publishes spread evenly over each second, across the processes too), to
 *      `<key>/data`. A device keeps at most `window` publishes un-acked, as a real client's in-flight window;
 *      one due while its window is full is skipped and counted. Reports `progress` every second and
 *      `published` (counts and publish → PUBACK histogram) once every PUBACK came or `drainMs` passed.
 *
 *   node dist/bench/scale-mqtt-load.js '<MqttLoadSettings as JSON>'     (started by bench/scale.ts)
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawConnect } from './reference/mqtt-connect.js';
import { devicesOf, Histogram, readCommands, report, type LoadCommand, type MqttCounts, type MqttLoadSettings } from './scale-common.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as MqttLoadSettings;
/** A CONNECT unanswered for this long is given up and tried again, as a device's connect timeout would. */
const CONNACK_TIMEOUT_MS = 15_000;
/** Publishes sent in one go before the loop lets PUBACKs in: a late generator catches up without starving its reads. */
const MAX_BURST = 2000;
const PUBLISH = 0x32; // PUBLISH, QoS 1
const PUBACK = 4;

const held = devicesOf(settings.devices, settings.process, settings.processes);
const count = held.length;
const W = settings.window;
const credentials = readFileSync(settings.credentials, 'utf8').split('\n');
const keys = held.map((index) => credentials[index]!.split('\t')[0]!);
const passwords = held.map((index) => credentials[index]!.split('\t')[1]!);
const topics = keys.map((key) => Buffer.from(`${key}/data`));

const sockets: (net.Socket | undefined)[] = new Array<net.Socket | undefined>(count);
/** Bytes of a packet split over reads, per device. */
const partial: (Buffer | undefined)[] = new Array<Buffer | undefined>(count);
const closed = new Uint8Array(count);
/** In-flight window of each device: when each slot's publish was sent (0: free) and its packet id. */
const sentAt = new Float64Array(count * W);
const slotPid = new Uint16Array(count * W);
const inFlight = new Uint16Array(count);
const lastPid = new Uint16Array(count);

const latency = new Histogram();
const lag = new Histogram();
const counts = { offered: 0, sent: 0, skippedWindowFull: 0, skippedClosed: 0, acked: 0, ackedInSchedule: 0, closed: 0, strayAcks: 0 } satisfies MqttCounts;
let publishing = false;
let scheduleRunning = false;

/** One CONNECT → the CONNACK return code, or what went wrong. The socket is kept when the device got in. */
async function attempt(device: number): Promise<number | 'error' | 'timeout'> {
  const index = held[device]!;
  const { code, socket } = await rawConnect({ port: settings.port, source: settings.sources[index % settings.sources.length]!, clientId: keys[device]!, username: keys[device]!, password: passwords[device]!, timeoutMs: CONNACK_TIMEOUT_MS });
  if (socket) {
    sockets[device] = socket;
    socket.on('data', (chunk: Buffer) => onData(device, chunk));
    socket.once('close', () => {
      closed[device] = 1;
      counts.closed++;
    });
  }
  return code;
}

async function connectAll(): Promise<void> {
  const started = performance.now();
  const deadline = started + settings.connectLimitMs;
  const refusals: Record<string, number> = {};
  let ok = 0;
  let attempts = 0;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const device = next++;
      while (performance.now() < deadline) {
        attempts++;
        const outcome = await attempt(device);
        if (outcome === 0) {
          ok++;
          break;
        }
        refusals[String(outcome)] = (refusals[String(outcome)] ?? 0) + 1;
        await sleep(1000 + Math.random() * 1000);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(settings.connectWindow, count) }, worker));
  report({ kind: 'connected', ok, failed: count - ok, attempts, refusals, seconds: (performance.now() - started) / 1000 });
}

/** PUBACKs (and anything else the service sends, skipped) from device `device`'s stream of bytes. */
function onData(device: number, chunk: Buffer): void {
  const rest = partial[device];
  const data = rest ? Buffer.concat([rest, chunk]) : chunk;
  partial[device] = undefined;
  let at = 0;
  while (at + 2 <= data.length) {
    // Remaining Length: 1–4 bytes, 7 bits each, least significant first.
    let length = 0;
    let shift = 0;
    let cursor = at + 1;
    let complete = false;
    while (cursor < data.length && cursor < at + 5) {
      const byte = data[cursor++]!;
      length += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if ((byte & 0x80) === 0) {
        complete = true;
        break;
      }
    }
    if (!complete || cursor + length > data.length) break;
    if (data[at]! >> 4 === PUBACK && length >= 2) onPuback(device, data.readUInt16BE(cursor));
    at = cursor + length;
  }
  if (at < data.length) partial[device] = Buffer.from(data.subarray(at));
}

function onPuback(device: number, pid: number): void {
  const now = performance.now();
  for (let slot = device * W; slot < device * W + W; slot++) {
    if (sentAt[slot] !== 0 && slotPid[slot] === pid) {
      latency.add(now - sentAt[slot]!);
      sentAt[slot] = 0;
      inFlight[device]!--;
      counts.acked++;
      if (scheduleRunning) counts.ackedInSchedule++;
      return;
    }
  }
  counts.strayAcks++;
}

/** The next packet id of `device` not in its window (1…65535). */
function nextPid(device: number): number {
  for (;;) {
    const pid = (lastPid[device]! % 0xffff) + 1;
    lastPid[device] = pid;
    let taken = false;
    for (let slot = device * W; slot < device * W + W; slot++) if (sentAt[slot] !== 0 && slotPid[slot] === pid) taken = true;
    if (!taken) return pid;
  }
}

function publish(device: number, seq: number): void {
  counts.offered++;
  const socket = sockets[device];
  if (!socket || closed[device]) {
    counts.skippedClosed++;
    return;
  }
  let free = -1;
  for (let slot = device * W; slot < device * W + W; slot++) {
    if (sentAt[slot] === 0) {
      free = slot;
      break;
    }
  }
  if (free < 0) {
    counts.skippedWindowFull++;
    return;
  }
  const pid = nextPid(device);
  const topic = topics[device]!;
  const payload = Buffer.from(`{"seq":${seq}}`);
  const remaining = 2 + topic.length + 2 + payload.length;
  const lengthBytes: number[] = [];
  for (let left = remaining; ; ) {
    const byte = left % 128;
    left = Math.floor(left / 128);
    lengthBytes.push(left > 0 ? byte | 0x80 : byte);
    if (left === 0) break;
  }
  const packet = Buffer.allocUnsafe(1 + lengthBytes.length + remaining);
  let at = 0;
  packet[at++] = PUBLISH;
  for (const byte of lengthBytes) packet[at++] = byte;
  at = packet.writeUInt16BE(topic.length, at);
  at += topic.copy(packet, at);
  at = packet.writeUInt16BE(pid, at);
  payload.copy(packet, at);
  slotPid[free] = pid;
  sentAt[free] = performance.now();
  inFlight[device]!++;
  counts.sent++;
  socket.write(packet);
}

async function publishAll(command: Extract<LoadCommand, { cmd: 'publish' }>): Promise<void> {
  if (publishing) return;
  publishing = true;
  // The orchestrator's clock (epoch ms) to this process's monotonic one.
  const start = performance.now() + (command.startAt - Date.now());
  const periodMs = 1000 / settings.rate;
  const rounds = Math.round(command.seconds * settings.rate);
  const total = count * rounds;
  const { devices, process: p, processes: P } = settings;
  /** When publish number `n` of this process is due: round ⌊n / count⌋, device n mod count (global index p + jP). */
  const dueAt = (n: number) => start + (Math.floor(n / count) + (p + (n % count) * P) / devices) * periodMs;
  /** How many of this process's publishes are due at `now`. */
  const dueBy = (now: number) => {
    const t = (now - start) / periodMs;
    if (t < 0) return 0;
    const round = Math.floor(t);
    const phase = (t - round) * devices;
    const inRound = phase < p ? 0 : Math.min(count, Math.floor((phase - p) / P) + 1);
    return Math.min(total, round * count + inRound);
  };
  // Reported just before each second of the schedule ends, when the orchestrator reads them.
  let progress: NodeJS.Timeout | undefined;
  const firstProgress = setTimeout(() => {
    report({ kind: 'progress', ...counts });
    progress = setInterval(() => report({ kind: 'progress', ...counts }), 1000);
  }, Math.max(0, start + 950 - performance.now()));
  let cursor = 0;
  scheduleRunning = true;
  while (cursor < total) {
    const now = performance.now();
    const due = Math.min(dueBy(now), cursor + MAX_BURST);
    for (; cursor < due; cursor++) {
      lag.add(now - dueAt(cursor));
      publish(cursor % count, Math.floor(cursor / count));
    }
    await sleep(cursor < total ? Math.max(1, Math.min(5, dueAt(cursor) - performance.now())) : 0);
  }
  // The schedule's end, not the loop's: acks after it are the drain's.
  await sleep(Math.max(0, start + rounds * periodMs - performance.now()));
  scheduleRunning = false;
  const drainUntil = performance.now() + command.drainMs;
  let lastAck = performance.now();
  let acked = counts.acked;
  while (performance.now() < drainUntil && counts.acked + unackedOnClosed() < counts.sent) {
    await sleep(20);
    if (counts.acked !== acked) {
      acked = counts.acked;
      lastAck = performance.now();
    }
  }
  clearTimeout(firstProgress);
  clearInterval(progress);
  const unacked = counts.sent - counts.acked;
  report({ kind: 'published', ...counts, unacked, latency: latency.toJSON(), lag: lag.toJSON(), seconds: (Math.max(lastAck, start + rounds * periodMs) - start) / 1000 });
}

/** Publishes in flight on connections that closed: no PUBACK will come for them. */
function unackedOnClosed(): number {
  let stuck = 0;
  for (let device = 0; device < count; device++) if (closed[device]) stuck += inFlight[device]!;
  return stuck;
}

readCommands(
  (command) => {
    if (command.cmd === 'publish') void publishAll(command);
  },
  // The orchestrator went away: nothing left to do.
  () => process.exit(0),
);
await connectAll();
