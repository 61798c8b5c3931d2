/**
 * LwM2M load generator of bench/scale.ts, in a process of its own (several for a large fleet: each device is a
 * UDP socket, a file descriptor). tools/lwm2m-client.ts's SimulatedClient binds 127.0.0.1 and carries a whole
 * CoAP endpoint and object tree per device; 100,000 of them do not fit one address's ephemeral ports, so these
 * devices are bare: one dgram socket each, bound to its loopback source address, speaking just the
 * registration interface with the project's CoAP codec (src/coap/message.ts).
 *
 *   - Register: CON POST /rd?ep=<key>&lt=<lifetime>&lwm2m=1.1&b=U with the object links `</1/0>,</3/0>,</3303/0>`,
 *     `window` in flight; retransmitted as RFC 7252 4.2 says (ACK_TIMEOUT 2 s × 1–1.5, doubled, 4 times); an
 *     empty ACK means a separate response follows (acknowledged when it is a CON); a 4.29 is tried again after
 *     its Max-Age. Reports `registered`.
 *   - Then each device stays registered: an Update (CON POST to its location) before 80 % of the lifetime has
 *     passed (none within a run when the lifetime is long), a new Register when the Update is answered 4.04.
 *     A request the service sends is answered 4.04 (these devices serve no objects). Reports `status` on request.
 *
 *   node dist/bench/scale-lwm2m-load.js '<Lwm2mLoadSettings as JSON>'     (started by bench/scale.ts)
 */
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeMessage, emptyMessage, encodeMessage, type CoapMessage } from '../src/coap/message.js';
import { locationPath, maxAge, option, OptionNumber, uriQueryOptions } from '../src/coap/options.js';
import { devicesOf, readCommands, report, type Lwm2mLoadSettings } from './scale-common.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as Lwm2mLoadSettings;
const ACK_TIMEOUT_MS = 2000;
const MAX_RETRANSMIT = 4;
/** How long a separate response may take after its empty ACK. */
const SEPARATE_TIMEOUT_MS = 60_000;
const LINK_FORMAT = 40;
const OBJECT_LINKS = Buffer.from('</1/0>,</3/0>,</3303/0>');
const BIND_BATCH = 500;

type Outcome = CoapMessage | 'timeout' | 'reset';

/** The exchange a device has in flight (at most one: a Register or an Update). */
interface Pending {
  readonly messageId: number;
  readonly token: Buffer;
  timer: NodeJS.Timeout | undefined;
  resolve(outcome: Outcome): void;
}

const held = devicesOf(settings.devices, settings.process, settings.processes);
const count = held.length;
const sockets: dgram.Socket[] = [];
const pending: (Pending | undefined)[] = new Array<Pending | undefined>(count);
const locations: (string[] | undefined)[] = new Array<string[] | undefined>(count);
const nextUpdateAt = new Float64Array(count);
const messageIds = Uint16Array.from({ length: count }, () => Math.floor(Math.random() * 0x10000));
const server = { port: settings.port, address: '127.0.0.1' };
const status = { updates: 0, updateFailures: 0, requestsAnswered: 0, retransmissions: 0 };

function send(device: number, datagram: Buffer): void {
  sockets[device]!.send(datagram, server.port, server.address);
}

function onMessage(device: number, datagram: Buffer): void {
  let message: CoapMessage;
  try {
    message = decodeMessage(datagram);
  } catch {
    return;
  }
  const exchange = pending[device];
  const isRequest = message.code !== '0.00' && message.code.startsWith('0.');
  if (isRequest) {
    // The service asking the device something: these devices have nothing to serve.
    if (message.type === 'CON') send(device, encodeMessage({ type: 'ACK', code: '4.04', messageId: message.messageId, token: message.token, options: [], payload: Buffer.alloc(0) }));
    status.requestsAnswered++;
    return;
  }
  if (message.type === 'RST') {
    if (exchange && message.messageId === exchange.messageId) exchange.resolve('reset');
    return;
  }
  if (message.type === 'ACK' && exchange && message.messageId === exchange.messageId) {
    clearTimeout(exchange.timer);
    if (message.code === '0.00') {
      // Empty ACK: the response comes separately; stop retransmitting and wait for it.
      exchange.timer = setTimeout(() => exchange.resolve('timeout'), SEPARATE_TIMEOUT_MS);
      return;
    }
    if (message.token.equals(exchange.token)) exchange.resolve(message);
    return;
  }
  // A separate response (CON or NON) to our token.
  if (message.type === 'CON') send(device, encodeMessage(emptyMessage('ACK', message.messageId)));
  if (exchange && message.token.equals(exchange.token)) {
    clearTimeout(exchange.timer);
    exchange.resolve(message);
  }
}

/** A CON request from `device` → the response, or what went wrong (RFC 7252 4.2 retransmission). */
function exchange(device: number, request: Omit<CoapMessage, 'type' | 'messageId' | 'token'>): Promise<Outcome> {
  return new Promise((resolve) => {
    const messageId = (messageIds[device] = (messageIds[device]! + 1) & 0xffff);
    const token = Buffer.allocUnsafe(4);
    token.writeUInt32BE(Math.floor(Math.random() * 0x100000000));
    const datagram = encodeMessage({ ...request, type: 'CON', messageId, token });
    let timeout = ACK_TIMEOUT_MS * (1 + Math.random() * 0.5);
    let transmissions = 0;
    const entry: Pending = {
      messageId,
      token,
      timer: undefined,
      resolve: (outcome) => {
        clearTimeout(entry.timer);
        if (pending[device] === entry) pending[device] = undefined;
        resolve(outcome);
      },
    };
    const transmit = () => {
      if (transmissions > MAX_RETRANSMIT) {
        entry.resolve('timeout');
        return;
      }
      if (transmissions > 0) status.retransmissions++;
      transmissions++;
      send(device, datagram);
      entry.timer = setTimeout(transmit, timeout);
      timeout *= 2;
    };
    pending[device] = entry;
    transmit();
  });
}

function nextUpdate(): number {
  return performance.now() + settings.lifetime * 1000 * (0.5 + Math.random() * 0.3);
}

/** Registers `device` until it is in, the service refuses it, or `deadline` passes → the final code. */
async function register(device: number, deadline: number): Promise<string> {
  for (;;) {
    const outcome = await exchange(device, {
      code: '0.02',
      options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions([`ep=${settings.keyPrefix}${held[device]!}`, `lt=${settings.lifetime}`, 'lwm2m=1.1', 'b=U']), option(OptionNumber.ContentFormat, LINK_FORMAT)],
      payload: OBJECT_LINKS,
    });
    if (typeof outcome === 'string') return outcome;
    if (outcome.code === '2.01') {
      locations[device] = locationPath(outcome);
      nextUpdateAt[device] = nextUpdate();
      return outcome.code;
    }
    // Too many requests from this peer: as a device would, after the Max-Age the service gave.
    if (outcome.code !== '4.29' || performance.now() > deadline) return outcome.code;
    await sleep(maxAge(outcome) * 1000);
  }
}

/** `task` for each index below `total`, `window` at once. */
async function windowed(total: number, window: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(window, total) }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

async function bindAll(): Promise<void> {
  for (let first = 0; first < count; first += BIND_BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BIND_BATCH, count - first) }, (_, k) => {
        const device = first + k;
        const socket = dgram.createSocket('udp4');
        sockets[device] = socket;
        socket.on('message', (datagram) => onMessage(device, datagram));
        return new Promise<void>((resolve, reject) => {
          socket.once('error', reject);
          socket.bind(0, settings.sources[held[device]! % settings.sources.length], () => {
            socket.removeListener('error', reject);
            // A send failing later (e.g. the service gone) is not this process's end.
            socket.on('error', () => undefined);
            resolve();
          });
        });
      }),
    );
  }
}

async function registerAll(): Promise<void> {
  await bindAll();
  const started = performance.now();
  const deadline = started + settings.registerLimitMs;
  const codes: Record<string, number> = {};
  let ok = 0;
  await windowed(count, settings.window, async (device) => {
    const code = await register(device, deadline);
    if (code === '2.01') ok++;
    else codes[code] = (codes[code] ?? 0) + 1;
  });
  report({ kind: 'registered', ok, failed: count - ok, codes, retransmissions: status.retransmissions, seconds: (performance.now() - started) / 1000 });
  void keepRegistered();
}

/** Updates before the lifetime runs out (registers again when the service forgot the registration). */
async function keepRegistered(): Promise<void> {
  for (;;) {
    await sleep(1000);
    const now = performance.now();
    const due: number[] = [];
    for (let device = 0; device < count; device++) if (locations[device] && pending[device] === undefined && nextUpdateAt[device]! <= now) due.push(device);
    await windowed(due.length, settings.window, async (i) => {
      const device = due[i]!;
      const outcome = await exchange(device, { code: '0.02', options: locations[device]!.map((segment) => option(OptionNumber.UriPath, segment)), payload: Buffer.alloc(0) });
      status.updates++;
      if (typeof outcome !== 'string' && outcome.code === '2.04') {
        nextUpdateAt[device] = nextUpdate();
        return;
      }
      status.updateFailures++;
      if (typeof outcome !== 'string' && outcome.code === '4.04') {
        // The service forgot the registration (Core 6.2.2): register again.
        locations[device] = undefined;
        await register(device, performance.now() + 60_000);
      } else {
        nextUpdateAt[device] = performance.now() + 5000;
      }
    });
  }
}

readCommands(
  (command) => {
    if (command.cmd === 'status') report({ kind: 'status', registered: locations.filter(Boolean).length, updates: status.updates, updateFailures: status.updateFailures, requestsAnswered: status.requestsAnswered });
  },
  // The orchestrator went away: nothing left to do.
  () => process.exit(0),
);
await registerAll();
