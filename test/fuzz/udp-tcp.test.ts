/**
 * UDP and TCP device-port fuzzing (docs/security.md "Fuzzing"): datagrams and streams whose keys match the
 * configured services (prefix rules with text, hex and binary delimiters, a key script on a claimed network,
 * the address rule, auto-provisioning; TCP login and prefix rules over delimiter and length framings),
 * mutated, sent to the shared ports on loopback: for TCP mostly after a valid log-in frame.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { chunks, eventSeen, fuzzAccount, fuzzEndpoint, fuzzService, Fuzzer, hex, INTERESTING_16, INTERESTING_32, mutateBytes, type FuzzService, type Rng, type RoundSpec } from '../helpers/fuzz.js';

const CONCURRENCY = 4;

const deviceKey = (group: string, slot: number) => `${group}-dev-${slot}`;

/** Whether this machine can send from 127.0.0.2 and up (Linux: all of 127/8 is loopback). */
let spareAddresses = false;
/** Whether ::1 is there: the device ports are dual-stack, so some cases come over IPv6. */
let ipv6 = false;

interface Context {
  readonly token: string;
  readonly udpPort: number;
  readonly tcpPort: number;
  readonly udpControlId: string;
  readonly tcpControlId: string;
}

// ---------------------------------------------------------------------------------------------------------
// UDP

interface UdpCase {
  readonly from: string;
  readonly datagrams: Buffer[];
}

/** The script service's key: 4 bytes read by its key script, as 8 hex digits. */
const SCRIPT_KEY = Buffer.from('fa57c0de', 'hex');

function udpDatagram(rng: Rng, slot: number, from: string): Buffer {
  const payload = rng.chance(0.5) ? Buffer.from(`t=${rng.int(100)}`) : rng.bytes(rng.range(0, 48));
  switch (rng.int(6)) {
    case 0:
    case 1:
      return Buffer.concat([Buffer.from(`${deviceKey('fzu', slot)}:`), payload]);
    case 2:
      // keyLength 4, keyEncoding hex: a binary id.
      return Buffer.concat([Buffer.from([0xb1, 0x0c, 0x00, slot]), payload]);
    case 3:
      // Auto-provisioning service, NUL-delimited keys: unknown ones become endpoints.
      return Buffer.concat([Buffer.from(rng.chance(0.5) ? `fza-${rng.text(4)}` : deviceKey('fzn', slot)), Buffer.from([0x00]), payload]);
    case 4:
      return from === '127.0.0.3' ? Buffer.concat([SCRIPT_KEY, payload]) : payload;
    default:
      return rng.bytes(rng.pick([0, 1, 2, 16, 1024, 1500, 65_507]));
  }
}

function udpCase(rng: Rng, slot: number): UdpCase {
  // 127.0.0.3 is the key script's claimed network; 127.0.0.4 a device named by its address.
  const from = rng.pick(['127.0.0.1', '127.0.0.1', ...(spareAddresses ? ['127.0.0.3', '127.0.0.4'] : []), ...(ipv6 ? ['::1'] : [])]);
  const datagrams = Array.from({ length: rng.range(1, 6) }, () => {
    const datagram = udpDatagram(rng, slot, from);
    if (rng.chance(0.15)) return datagram;
    const mutated = mutateBytes(rng, datagram, 4);
    return mutated.length > 65_507 ? mutated.subarray(0, 65_507) : mutated;
  });
  return { from, datagrams };
}

async function sendUdp(context: Context, input: UdpCase): Promise<undefined> {
  const v6 = input.from.includes(':');
  const socket = dgram.createSocket(v6 ? 'udp6' : 'udp4');
  socket.on('error', () => undefined);
  try {
    await new Promise<void>((resolve) => socket.bind(0, input.from, () => resolve()));
    for (const datagram of input.datagrams) {
      await new Promise<void>((resolve) => socket.send(datagram, context.udpPort, v6 ? '::1' : '127.0.0.1', () => resolve()));
      await sleep(1);
    }
    // Queued messages (udp.queue) would come back now; nothing is queued, so this only paces the sender.
    await sleep(5);
  } finally {
    socket.close();
  }
  return undefined;
}

async function udpControl(context: Context, service: FuzzService): Promise<void> {
  const nonce = `control ${Date.now()} ${Math.random()}`;
  await sendUdp(context, { from: '127.0.0.1', datagrams: [Buffer.from(`fzu-ctl:${nonce}`)] });
  await eventSeen(service, context.token, context.udpControlId, 'udp-message', (data) => data.text === nonce);
}

// ---------------------------------------------------------------------------------------------------------
// TCP

type Framing = 'lines' | 'length2' | 'length4' | 'tilde' | 'crlf';

interface TcpCase {
  readonly host: '127.0.0.1' | '::1';
  readonly framing: Framing;
  /** The log-in (or, for prefix rules, the first) frame: valid, or mutated in the pre-log-in cases. */
  readonly login: Buffer;
  readonly loginValid: boolean;
  /** Written after the log-in frame had 20 ms to be handled. */
  readonly writes: Buffer[];
  readonly close: 'destroy' | 'end';
}

function frame(framing: Framing, payload: Buffer): Buffer {
  switch (framing) {
    case 'lines':
      return Buffer.concat([payload, Buffer.from('\n')]);
    case 'crlf':
      return Buffer.concat([payload, Buffer.from('\r\n')]);
    case 'tilde':
      return Buffer.concat([payload, Buffer.from([0x7e])]);
    case 'length2': {
      const header = Buffer.alloc(2);
      header.writeUInt16BE(payload.length & 0xffff);
      return Buffer.concat([header, payload]);
    }
    default: {
      // lengthIncludesHeader: the length counts its own 4 bytes.
      const header = Buffer.alloc(4);
      header.writeUInt32BE(payload.length + 4);
      return Buffer.concat([header, payload]);
    }
  }
}

/** The key and how frames are written for each TCP service (see setup). */
function loginPayload(framing: Framing, slot: number): Buffer {
  switch (framing) {
    case 'lines':
      return Buffer.from(deviceKey('fzt', slot));
    case 'length2':
      return Buffer.from(deviceKey('fzb', slot));
    case 'length4':
      return Buffer.from(`${deviceKey('fzx', slot)}:hello`);
    case 'tilde':
      return Buffer.from(`${deviceKey('fzy', slot)}#hello`);
    default:
      return Buffer.from(deviceKey('fzr', slot));
  }
}

function dataPayload(rng: Rng, framing: Framing, slot: number): Buffer {
  const body = rng.chance(0.5) ? Buffer.from(`v=${rng.int(1000)}`) : rng.bytes(rng.range(0, 32)).filter((b) => b !== 0x0a && b !== 0x7e);
  if (framing === 'length4') return Buffer.concat([Buffer.from(`${rng.chance(0.9) ? deviceKey('fzx', slot) : 'someone-else'}:`), Buffer.from(body)]);
  if (framing === 'tilde') return Buffer.concat([Buffer.from(`${deviceKey('fzy', slot)}#`), Buffer.from(body)]);
  return Buffer.from(body);
}

function tcpCase(rng: Rng, slot: number): TcpCase {
  const framing = rng.pick(['lines', 'length2', 'length4', 'tilde', 'crlf'] as const);
  const loginValid = rng.chance(0.8);
  let login = frame(framing, loginPayload(framing, slot));
  if (!loginValid) login = rng.chance(0.2) ? frame(framing, Buffer.from(`fza-${rng.text(5)}`)) : mutateBytes(rng, login, 3);
  const frames = Array.from({ length: rng.range(1, 6) }, () => frame(framing, dataPayload(rng, framing, slot)));
  let stream: Buffer = Buffer.concat(frames);
  if (rng.chance(0.85)) {
    switch (rng.int(5)) {
      case 0: {
        // A length header announcing something else.
        const header = Buffer.alloc(4);
        header.writeUInt32BE(rng.pick(INTERESTING_32));
        stream = Buffer.concat([stream, header.subarray(framing === 'length2' ? 2 : 0), rng.bytes(rng.int(40))]);
        break;
      }
      case 1: {
        const header = Buffer.alloc(2);
        header.writeUInt16BE(rng.pick(INTERESTING_16));
        stream = Buffer.concat([header, stream]);
        break;
      }
      case 2:
        // No delimiter for a long time: past maxFrameBytes, or just past the 4 KiB of a first frame.
        stream = Buffer.concat([stream, Buffer.alloc(rng.pick([600, 1100, 5000, 70_000]), 0x41)]);
        break;
      default:
        stream = mutateBytes(rng, stream, 4);
    }
  }
  return { host: ipv6 && rng.chance(0.2) ? '::1' : '127.0.0.1', framing, login, loginValid, writes: chunks(rng, stream, 5), close: rng.pick(['destroy', 'end'] as const) };
}

async function sendTcp(context: Context, input: TcpCase): Promise<undefined> {
  const socket = net.connect({ port: context.tcpPort, host: input.host });
  let closed = false;
  let lastActivity = Date.now();
  socket.on('data', () => (lastActivity = Date.now()));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  try {
    await new Promise<void>((resolve) => {
      socket.once('connect', () => resolve());
      socket.once('close', () => resolve());
    });
    if (closed) return undefined;
    socket.write(input.login);
    await sleep(20);
    for (const write of input.writes) {
      if (closed) break;
      socket.write(write);
      await sleep(0);
    }
    lastActivity = Date.now();
    const deadline = Date.now() + 400;
    while (!closed && Date.now() < deadline && Date.now() - lastActivity < 30) await sleep(5);
    if (input.close === 'end') socket.end();
    return undefined;
  } finally {
    socket.destroy();
  }
}

async function tcpControl(context: Context, service: FuzzService): Promise<void> {
  const nonce = `control ${Date.now()} ${Math.random()}`;
  const socket = net.connect({ port: context.tcpPort, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  try {
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.write(`fzt-ctl\n${nonce}\n`);
    await eventSeen(service, context.token, context.tcpControlId, 'tcp-message', (data) => data.text === nonce);
  } finally {
    socket.destroy();
  }
}

describe('fuzz: UDP and TCP device ports (the service in its own process)', () => {
  const fuzzer = new Fuzzer<Context>({
    async setup(service) {
      const account = await fuzzAccount(service, 'fuzz-udp-tcp');
      const { token } = account;
      const prefix = await fuzzService(service, token, { name: 'udp prefix', type: 'udp' });
      const binary = await fuzzService(service, token, { name: 'udp binary ids', type: 'udp', options: { keyLength: 4, keyEncoding: 'hex' } });
      const auto = await fuzzService(service, token, { name: 'udp auto', type: 'udp', options: { keyDelimiterHex: '00', autoProvision: true } });
      const lines = await fuzzService(service, token, { name: 'tcp lines', type: 'tcp' });
      const length2 = await fuzzService(service, token, { name: 'tcp trackers', type: 'tcp', options: { framing: 'length', lengthBytes: 2, loginReplyHex: '01', maxFrameBytes: 512 } });
      const length4 = await fuzzService(service, token, { name: 'tcp prefixed', type: 'tcp', options: { framing: 'length', lengthBytes: 4, lengthIncludesHeader: true, keyRule: 'prefix', maxFrameBytes: 1024 } });
      const tilde = await fuzzService(service, token, { name: 'tcp tilde', type: 'tcp', options: { delimiterHex: '7e', keyRule: 'prefix', keyDelimiter: '#' } });
      const crlf = await fuzzService(service, token, { name: 'tcp crlf auto', type: 'tcp', options: { delimiter: '\r\n', autoProvision: true, loginReply: 'OK\r\n' } });
      for (let slot = 0; slot < CONCURRENCY; slot++) {
        await fuzzEndpoint(service, token, { key: deviceKey('fzu', slot), serviceId: prefix });
        await fuzzEndpoint(service, token, { key: Buffer.from([0xb1, 0x0c, 0x00, slot]).toString('hex'), serviceId: binary });
        await fuzzEndpoint(service, token, { key: deviceKey('fzn', slot), serviceId: auto });
        await fuzzEndpoint(service, token, { key: deviceKey('fzt', slot), serviceId: lines });
        await fuzzEndpoint(service, token, { key: deviceKey('fzb', slot), serviceId: length2 });
        await fuzzEndpoint(service, token, { key: deviceKey('fzx', slot), serviceId: length4 });
        await fuzzEndpoint(service, token, { key: deviceKey('fzy', slot), serviceId: tilde });
        await fuzzEndpoint(service, token, { key: deviceKey('fzr', slot), serviceId: crlf });
      }
      if (spareAddresses) {
        const scripted = await fuzzService(service, token, { name: 'udp script', type: 'udp', options: { keyRule: 'script', sources: ['127.0.0.3'], keyScript: 'var r = convert.binReader(datagram.payload); return r.readBytes(4);' } });
        await fuzzEndpoint(service, token, { key: SCRIPT_KEY.toString('hex'), serviceId: scripted });
        const byAddress = await fuzzService(service, token, { name: 'udp by address', type: 'udp', options: { keyRule: 'address' } });
        await fuzzEndpoint(service, token, { key: '127.0.0.4', serviceId: byAddress });
      }
      const udpControlId = await fuzzEndpoint(service, token, { key: 'fzu-ctl', serviceId: prefix });
      const tcpControlId = await fuzzEndpoint(service, token, { key: 'fzt-ctl', serviceId: lines });
      return { token, udpPort: service.ports.udp!, tcpPort: service.ports.tcp!, udpControlId, tcpControlId };
    },
  });

  before(async () => {
    const bindable = (type: 'udp4' | 'udp6', address: string) =>
      new Promise<boolean>((resolve) => {
        const probe = dgram.createSocket(type);
        probe.once('error', () => (probe.close(), resolve(false)));
        probe.bind(0, address, () => (probe.close(), resolve(true)));
      });
    spareAddresses = await bindable('udp4', '127.0.0.3');
    ipv6 = await bindable('udp6', '::1');
    await fuzzer.start();
  });
  after(() => fuzzer.stop());

  const round = <I>(spec: RoundSpec<Context, I>) => fuzzer.test(spec);

  it(
    'UDP: mutated datagrams for prefix, binary-id, auto-provisioning, key-script and address services',
    round<UdpCase>({
      name: 'udp-datagrams',
      count: 500,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => udpCase(rng, slot),
      show: (input) => `from ${input.from}: ${input.datagrams.map((d) => hex(d, 2048)).join(' | ')}`,
      send: sendUdp,
      control: udpControl,
      settleMs: 1500,
    }),
  );

  it(
    'TCP: mutated frames after a valid log-in (and mutated log-ins) over line, length and delimiter framings',
    round<TcpCase>({
      name: 'tcp-streams',
      count: 400,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => tcpCase(rng, slot),
      show: (input) => `to ${input.host}, ${input.framing} framing, ${input.loginValid ? 'valid' : 'mutated'} log-in frame ${hex(input.login, 512)}, then ${input.writes.map((w) => hex(w, 4096)).join(' | ') || '(nothing)'}`,
      send: sendTcp,
      control: tcpControl,
    }),
  );

  it('the fuzzed devices were reached: their messages became events', async (t) => {
    for (const type of ['udp-message', 'tcp-message', 'on-create', 'on-connect']) {
      const found = await fuzzer.service.request('GET', `/history?type=${type}&limit=200`, { token: fuzzer.context.token });
      assert.equal(found.status, 200, found.text);
      t.diagnostic(`${type}: ${found.json.items.length === 200 ? '200 or more' : found.json.items.length} events`);
      if (type.endsWith('-message')) assert.ok(found.json.items.length > 1, `no ${type} event beyond the control's: the rounds reached no device`);
    }
  });
});
