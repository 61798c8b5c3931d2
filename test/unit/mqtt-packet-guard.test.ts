import assert from 'node:assert/strict';
import net from 'node:net';
import { duplexPair, type Duplex } from 'node:stream';
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { generate } from 'mqtt-packet';
import { PacketGuard, PacketViolation } from '../../src/mqtt/packet-guard.js';

/** MQTT 3.1.1 section 2.2.3, Table 2.4: the Remaining Length encodings at each size boundary. */
const REMAINING_LENGTH_VECTORS: readonly [number, readonly number[]][] = [
  [0, [0x00]],
  [127, [0x7f]],
  [128, [0x80, 0x01]],
  [16_383, [0xff, 0x7f]],
  [16_384, [0x80, 0x80, 0x01]],
  [2_097_151, [0xff, 0xff, 0x7f]],
  [2_097_152, [0x80, 0x80, 0x80, 0x01]],
  [268_435_455, [0xff, 0xff, 0xff, 0x7f]],
];

const CONNECT = generate({ cmd: 'connect', protocolVersion: 4, protocolId: 'MQTT', clientId: 'guard-test', clean: true, keepalive: 30, username: 'dev-1', password: Buffer.from('secret') });
const PINGREQ = generate({ cmd: 'pingreq' });
const publish = (topic: string, payload: Buffer | string, qos: 0 | 1 = 0, messageId = 1) => generate({ cmd: 'publish', topic, payload, qos, retain: false, dup: false, messageId });

/** Lets queued stream callbacks and 'data' events run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await tick();
}

interface Guarded {
  /** The device's end: what it writes reaches the guard as one chunk per write. */
  readonly device: Duplex;
  readonly guard: PacketGuard;
  readonly errors: Error[];
  /** Everything the guard lets through to its reader (the broker), once `read()` was called. */
  readonly passed: Buffer[];
  first: Buffer | undefined | null;
  /** Writes each chunk separately and lets the guard see it. */
  send(...chunks: (Buffer | number[])[]): Promise<void>;
  /** Starts reading what the guard lets through. */
  read(): void;
}

/** A guard over one side of an in-memory duplex pair. */
function guarded(maxPacketBytes: number): Guarded {
  const [device, server] = duplexPair();
  const guard = new PacketGuard(server, maxPacketBytes);
  const state: Guarded = {
    device,
    guard,
    errors: [],
    passed: [],
    first: null,
    async send(...chunks) {
      for (const chunk of chunks) {
        device.write(Buffer.from(chunk));
        await settle();
      }
    },
    read() {
      guard.on('data', (chunk: Buffer) => state.passed.push(chunk));
    },
  };
  guard.on('error', (error) => state.errors.push(error));
  void guard.firstPacket().then((packet) => (state.first = packet));
  return state;
}

function assertRefused(subject: Guarded, reason: RegExp, what: string): void {
  assert.equal(subject.guard.destroyed, true, `${what}: the connection is closed`);
  assert.equal(subject.errors.length, 1, `${what}: one violation`);
  assert.ok(subject.errors[0] instanceof PacketViolation, `${what}: ${String(subject.errors[0])}`);
  assert.match(subject.errors[0].message, reason, what);
}

function assertOpen(subject: Guarded, what: string): void {
  assert.deepEqual(subject.errors.map((e) => e.message), [], what);
  assert.equal(subject.guard.destroyed, false, `${what}: the connection stays open`);
}

describe('PacketGuard: Remaining Length (MQTT 3.1.1 2.2.3)', () => {
  it('refuses a first packet one byte over the limit and accepts one at the limit, at every encoding boundary', async () => {
    for (const [length, encoded] of REMAINING_LENGTH_VECTORS) {
      const at = guarded(length);
      await at.send([0x10, ...encoded]);
      assertOpen(at, `remaining length ${length} with a limit of ${length}`);
      if (length === 0) continue;
      const below = guarded(length - 1);
      await below.send([0x10, ...encoded]);
      assertRefused(below, new RegExp(`a packet of ${length} bytes, over the ${length - 1}-byte limit`), `remaining length ${length} with a limit of ${length - 1}`);
      assert.equal(below.first, undefined, 'no first packet');
    }
  });

  it('reads each encoding to its exact length: the first packet ends where the encoded length says', async () => {
    for (const [length, encoded] of REMAINING_LENGTH_VECTORS) {
      // 256 MiB bodies are not worth allocating; the limit test above pins 268435455 down to the byte.
      if (length > 2_097_152) continue;
      const subject = guarded(268_435_455);
      const packet = Buffer.concat([Buffer.from([0x10, ...encoded]), Buffer.alloc(length, 0xab)]);
      await subject.send(Buffer.concat([packet, PINGREQ]));
      assertOpen(subject, `remaining length ${length}`);
      assert.ok(subject.first, `remaining length ${length}: the first packet is complete`);
      assert.equal(subject.first.length, 1 + encoded.length + length);
      assert.ok(subject.first.equals(packet), `remaining length ${length}: exactly the CONNECT's bytes`);
    }
  });

  it('applies the limit to every later packet too, whatever its type', async () => {
    for (const [length, encoded] of REMAINING_LENGTH_VECTORS) {
      if (length <= CONNECT.length) continue;
      for (const type of [0x30, 0x32, 0x82, 0xc0]) {
        const at = guarded(length);
        at.read();
        await at.send(CONNECT);
        at.guard.release();
        await at.send([type, ...encoded]);
        assertOpen(at, `packet type 0x${type.toString(16)} of remaining length ${length} at the limit`);
        const below = guarded(length - 1);
        below.read();
        await below.send(CONNECT);
        below.guard.release();
        await below.send([type, ...encoded]);
        assertRefused(below, /over the .*-byte limit/, `packet type 0x${type.toString(16)} of remaining length ${length} over a limit of ${length - 1}`);
        assert.ok(Buffer.concat(below.passed).equals(CONNECT), 'nothing of the refused packet reaches the broker');
      }
    }
  });

  it('reads a remaining length whose bytes arrive in separate chunks', async () => {
    for (const [length, encoded] of REMAINING_LENGTH_VECTORS) {
      if (length === 0) continue;
      const below = guarded(length - 1);
      await below.send([0x10], ...encoded.map((byte) => [byte]));
      assertRefused(below, new RegExp(`a packet of ${length} bytes`), `split remaining length ${length}`);
      const at = guarded(length);
      await at.send([0x10], ...encoded.map((byte) => [byte]));
      assertOpen(at, `split remaining length ${length}`);
    }
  });

  it('refuses a fifth length byte as malformed, before or after the first packet', async () => {
    const malformed = [0x80, 0x80, 0x80, 0x80, 0x01];
    const first = guarded(268_435_455);
    await first.send([0x10, ...malformed]);
    assertRefused(first, /malformed remaining length/, 'a CONNECT with five length bytes');
    const split = guarded(268_435_455);
    await split.send([0x10], ...malformed.map((byte) => [byte]));
    assertRefused(split, /malformed remaining length/, 'five length bytes in separate chunks');
    const all = guarded(268_435_455);
    await all.send([0x10, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    assertRefused(all, /malformed remaining length/, 'FF FF FF FF 7F');
    const later = guarded(268_435_455);
    later.read();
    await later.send(CONNECT);
    later.guard.release();
    await later.send([0x30, ...malformed]);
    assertRefused(later, /malformed remaining length/, 'a PUBLISH with five length bytes');
    // Four length bytes, the last without the continuation bit, are the most there may be: not malformed.
    const four = guarded(268_435_455);
    await four.send([0x10, 0x80, 0x80, 0x80, 0x01]);
    assertOpen(four, 'four length bytes');
  });
});

describe('PacketGuard: CONNECT first, once', () => {
  it('refuses a first packet of any other type before its body', async () => {
    for (let type = 0; type < 16; type++) {
      if (type === 1) continue;
      const subject = guarded(4096);
      await subject.send([type << 4]);
      assertRefused(subject, /the first packet is not CONNECT/, `first packet type ${type}`);
      assert.equal(subject.first, undefined);
    }
    const real = guarded(4096);
    await real.send(PINGREQ);
    assertRefused(real, /not CONNECT/, 'PINGREQ first');
    const publishFirst = guarded(4096);
    await publishFirst.send(publish('dev-1/up', 'x'));
    assertRefused(publishFirst, /not CONNECT/, 'PUBLISH first');
  });

  it('accepts a CONNECT whatever its flag nibble (the broker checks those) and holds it until release', async () => {
    const subject = guarded(4096);
    subject.read();
    await subject.send(CONNECT);
    assertOpen(subject, 'CONNECT');
    assert.ok(subject.first?.equals(CONNECT));
    assert.deepEqual(subject.passed, [], 'nothing reaches the broker before release');
    const flagged = guarded(4096);
    await flagged.send([0x1f, 0x00]);
    assertOpen(flagged, 'CONNECT with reserved flags set');
    assert.deepEqual([...(flagged.first ?? [])], [0x1f, 0x00]);
  });

  it('refuses a second CONNECT: in the same chunk, in a later chunk before release, and after release', async () => {
    const same = guarded(4096);
    await same.send(Buffer.concat([CONNECT, CONNECT]));
    assertRefused(same, /a second CONNECT/, 'two CONNECTs in one chunk');
    assert.equal(same.first, undefined, 'the connection is refused before the first packet is handed out');

    const held = guarded(4096);
    await held.send(CONNECT);
    assert.ok(held.first?.equals(CONNECT));
    await held.send(CONNECT);
    // The guard stops reading after the first packet until release; the second CONNECT is seen then.
    held.read();
    held.guard.release();
    await settle();
    assertRefused(held, /a second CONNECT/, 'a second CONNECT sent before release');
    assert.ok(Buffer.concat(held.passed).equals(CONNECT), 'only the first CONNECT reached the broker');

    const later = guarded(4096);
    later.read();
    await later.send(CONNECT);
    later.guard.release();
    await later.send(publish('dev-1/up', 'a'), PINGREQ);
    assertOpen(later, 'packets after CONNECT');
    await later.send(CONNECT);
    assertRefused(later, /a second CONNECT/, 'a second CONNECT after other packets');
    assert.ok(Buffer.concat(later.passed).equals(Buffer.concat([CONNECT, publish('dev-1/up', 'a'), PINGREQ])));
  });

  it('a second CONNECT hidden in the body of another packet is only body', async () => {
    const subject = guarded(4096);
    subject.read();
    await subject.send(CONNECT);
    subject.guard.release();
    const carrier = publish('dev-1/up', CONNECT);
    await subject.send(carrier);
    assertOpen(subject, 'a PUBLISH whose payload is a CONNECT');
    assert.ok(Buffer.concat(subject.passed).equals(Buffer.concat([CONNECT, carrier])));
  });
});

describe('PacketGuard: SUBSCRIBE and UNSUBSCRIBE need a topic filter ([MQTT-3.8.3-3], [MQTT-3.10.3-2])', () => {
  it('refuses one that carries only its packet identifier, before the broker sees it; one with a filter passes', async () => {
    for (const [name, empty] of [
      ['SUBSCRIBE', [0x82, 0x02, 0x00, 0x01]],
      ['UNSUBSCRIBE', [0xa2, 0x02, 0x00, 0x01]],
    ] as const) {
      const subject = guarded(4096);
      subject.read();
      await subject.send(CONNECT);
      subject.guard.release();
      await subject.send([...empty]);
      assertRefused(subject, new RegExp(`${name} without topic filters`), name);
      assert.ok(Buffer.concat(subject.passed).equals(CONNECT), `${name}: only the CONNECT reached the broker`);
    }
    const subscribing = guarded(4096);
    subscribing.read();
    await subscribing.send(CONNECT);
    subscribing.guard.release();
    await subscribing.send(generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'dev-1/down', qos: 0 }] }), generate({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: ['dev-1/down'] }));
    assertOpen(subscribing, 'SUBSCRIBE and UNSUBSCRIBE with a filter each');
  });
});

describe('PacketGuard: firstPacket()', () => {
  it('assembles the CONNECT from 1-byte chunks and resolves only once its last byte arrived', async () => {
    const subject = guarded(4096);
    for (let i = 0; i < CONNECT.length; i++) {
      assert.equal(subject.first, null, `not complete after ${i} bytes`);
      await subject.send([CONNECT[i]!]);
    }
    assertOpen(subject, '1-byte chunks');
    assert.ok(subject.first instanceof Buffer);
    assert.ok(subject.first.equals(CONNECT), 'exactly the CONNECT');
  });

  it('returns only the CONNECT when more packets follow in the same chunk, and keeps those for the broker', async () => {
    const rest = Buffer.concat([publish('dev-1/up', 'one', 1, 7), PINGREQ, publish('dev-1/up', Buffer.alloc(300, 1))]);
    const subject = guarded(4096);
    await subject.send(Buffer.concat([CONNECT, rest]));
    assertOpen(subject, 'CONNECT and more in one chunk');
    assert.ok(subject.first?.equals(CONNECT), 'the first packet is the CONNECT alone');
    subject.read();
    subject.guard.release();
    await settle();
    assert.ok(Buffer.concat(subject.passed).equals(Buffer.concat([CONNECT, rest])), 'release hands on everything');
  });

  it('finds the CONNECT end when it falls inside a later chunk that also starts the next packet', async () => {
    const bytes = Buffer.concat([CONNECT, publish('dev-1/up', 'x'), PINGREQ]);
    const subject = guarded(4096);
    // Chunks of 5 bytes: the CONNECT's end and the PUBLISH's start share one.
    const chunks: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 5) chunks.push(bytes.subarray(i, i + 5));
    await subject.send(...chunks);
    assert.ok(subject.first?.equals(CONNECT));
    subject.read();
    subject.guard.release();
    await settle();
    assert.ok(Buffer.concat(subject.passed).equals(bytes));
  });

  it('hands on the held packets when the device half-closes before release', async () => {
    const bytes = Buffer.concat([CONNECT, publish('dev-1/up', 'fire-and-forget'), generate({ cmd: 'disconnect' })]);
    const subject = guarded(4096);
    subject.device.end(bytes);
    await settle();
    assert.ok(subject.first?.equals(CONNECT));
    subject.read();
    subject.guard.release();
    await settle();
    assert.deepEqual(subject.errors.map((e) => e.message), []);
    assert.ok(Buffer.concat(subject.passed).equals(bytes), 'CONNECT, PUBLISH and DISCONNECT reach the broker');
  });

  it('resolves undefined when the connection closes before the CONNECT is complete', async () => {
    const subject = guarded(4096);
    await subject.send(CONNECT.subarray(0, 10));
    assert.equal(subject.first, null);
    subject.guard.inner.destroy();
    await settle();
    assert.equal(subject.first, undefined);
    assert.equal(subject.guard.destroyed, true);
  });

  it('resolves undefined when the guard is destroyed (the CONNECT timeout)', async () => {
    const subject = guarded(4096);
    await subject.send(CONNECT.subarray(0, 3));
    subject.guard.destroy(new Error('no CONNECT within 30 s'));
    await settle();
    assert.equal(subject.first, undefined);
    assert.equal(subject.guard.inner.destroyed, true, 'the device connection is closed with it');
  });
});

describe('PacketGuard: release() over a real TCP connection', () => {
  let server: net.Server;
  let port: number;
  const accepted: net.Socket[] = [];
  const clients: net.Socket[] = [];

  before(async () => {
    server = net.createServer((socket) => accepted.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    for (const socket of [...accepted, ...clients]) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** A device connection and the guard over the service's end of it. */
  async function connection(maxPacketBytes: number): Promise<{ device: net.Socket; guard: PacketGuard; errors: Error[] }> {
    const count = accepted.length;
    const device = net.connect(port, '127.0.0.1');
    clients.push(device);
    await new Promise<void>((resolve) => device.once('connect', resolve));
    while (accepted.length === count) await sleep(1);
    const guard = new PacketGuard(accepted[count]!, maxPacketBytes);
    const errors: Error[] = [];
    guard.on('error', (error) => errors.push(error));
    return { device, guard, errors };
  }

  /** Mixed packets, `total` bytes or a little more. */
  function traffic(total: number): Buffer[] {
    const packets: Buffer[] = [];
    let bytes = 0;
    for (let i = 0; bytes < total; i++) {
      const size = [0, 1, 127, 128, 1000, 3000, 16_000][i % 7]!;
      const packet = i % 5 === 4 ? PINGREQ : publish(`dev-1/${i}`, Buffer.alloc(size, i & 0xff), (i % 2) as 0 | 1, (i % 65_535) + 1);
      packets.push(packet);
      bytes += packet.length;
    }
    return packets;
  }

  it('passes everything through byte-exact and in order, in odd chunks, under backpressure', async () => {
    const { device, guard, errors } = await connection(20_000);
    const before = Buffer.concat([CONNECT, ...traffic(200_000)]);
    const afterRelease = Buffer.concat(traffic(3_000_000));
    // Odd chunk sizes so that headers and length bytes straddle writes.
    for (let i = 0; i < before.length; ) {
      const size = 1 + ((i * 7919) % 4099);
      device.write(before.subarray(i, i + size));
      i += size;
    }
    const first = await guard.firstPacket();
    assert.ok(first?.equals(CONNECT));
    let pauses = 0;
    const pause = guard.inner.pause.bind(guard.inner);
    guard.inner.pause = () => {
      pauses++;
      return pause();
    };
    guard.release();
    const writing = new Promise<void>((resolve) => device.end(afterRelease, resolve));
    const received: Buffer[] = [];
    let bytes = 0;
    // A slow reader: the guard must pause the socket rather than drop or reorder anything.
    for await (const chunk of guard) {
      received.push(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      if (received.length % 16 === 0) await sleep(1);
    }
    await writing;
    assert.ok(pauses > 0, 'the slow reader held the socket back');
    assert.deepEqual(errors, []);
    assert.equal(bytes, before.length + afterRelease.length);
    assert.ok(Buffer.concat(received).equals(Buffer.concat([before, afterRelease])), 'byte-exact and in order');
  });

  it('writes what the broker sends back to the device unchanged', async () => {
    const { device, guard } = await connection(4096);
    const answered: Buffer[] = [];
    device.on('data', (chunk: Buffer) => answered.push(chunk));
    device.write(CONNECT);
    await guard.firstPacket();
    guard.release();
    const connack = generate({ cmd: 'connack', returnCode: 0, sessionPresent: false });
    const suback = generate({ cmd: 'suback', messageId: 3, granted: [1] });
    guard.cork();
    guard.write(connack.subarray(0, 2));
    guard.write(connack.subarray(2));
    guard.uncork();
    guard.write(suback);
    await new Promise<void>((resolve) => guard.write(Buffer.alloc(0), () => resolve()));
    while (Buffer.concat(answered).length < connack.length + suback.length) await sleep(5);
    assert.ok(Buffer.concat(answered).equals(Buffer.concat([connack, suback])));
  });

  it('closes the TCP connection on a violation, before the body is read', async () => {
    const { device, guard, errors } = await connection(4096);
    const closed = new Promise<void>((resolve) => device.on('close', () => resolve()));
    device.on('error', () => undefined);
    device.write(CONNECT);
    await guard.firstPacket();
    guard.release();
    guard.resume();
    device.write(Buffer.from([0x30, 0x81, 0x20]));
    await closed;
    assert.equal(errors.length, 1);
    assert.match(errors[0]!.message, /a packet of 4097 bytes, over the 4096-byte limit/);
  });
});
