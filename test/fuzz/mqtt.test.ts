/**
 * MQTT fuzzing (docs/security.md "Fuzzing"): valid MQTT 3.1.1 and MQTT 5 packet flows, generated with
 * mqtt-packet, mutated, and sent on fresh connections AFTER a successful log-in (and, in a round of their
 * own, mutated CONNECT packets before it). The service runs in its own process: a crash is its exit.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { generate, type IConnectPacket, type Packet } from 'mqtt-packet';
import { chunks, eventSeen, fuzzAccount, fuzzEndpoint, fuzzService, Fuzzer, hex, INTERESTING_16, INTERESTING_32, INTERESTING_8, INVALID_UTF8, mutateBytes, type FuzzService, type Rng, type RoundSpec } from '../helpers/fuzz.js';

const PASSWORD = 'fuzz-device-password-1';
const CONCURRENCY = 4;

type Version = 3 | 4 | 5;

/** Device keys of one length whatever the slot, so a case replayed in another slot mutates the same offsets. */
const deviceKey = (group: string, slot: number) => `${group}-dev-${slot}`;

interface Context {
  readonly token: string;
  readonly controlId: string;
  readonly port: number;
}

interface MqttCase {
  readonly version: Version;
  /** The CONNECT, valid (after-log-in rounds) or mutated. */
  readonly connect: Buffer;
  /** Whether a CONNACK accepting the log-in must come before `writes` are sent. */
  readonly loginFirst: boolean;
  /** Written one after another once logged in (or right after the CONNECT). */
  readonly writes: Buffer[];
  /** What was done to the valid flow, for the report. */
  readonly mutations: string[];
  readonly close: 'destroy' | 'end' | 'linger';
  readonly localAddress?: string;
}

// ---------------------------------------------------------------------------------------------------------
// Valid packets

function connectPacket(rng: Rng, version: Version, key: string, valid: boolean): IConnectPacket {
  const packet: IConnectPacket = {
    cmd: 'connect',
    protocolId: version === 3 ? 'MQIsdp' : 'MQTT',
    protocolVersion: version,
    clientId: rng.chance(0.2) ? '' : `fuzz-${rng.text(6)}`,
    clean: valid ? rng.chance(0.8) : rng.chance(0.5),
    keepalive: rng.pick([0, 1, 30, 60, 65535]),
    username: key,
    password: Buffer.from(PASSWORD),
  };
  if (version === 3 && packet.clientId === '') packet.clientId = 'fuzz-3';
  if (version === 4 && packet.clientId === '') packet.clean = true;
  if (rng.chance(0.3)) {
    packet.will = { topic: `${key}/will`, payload: rng.bytes(rng.int(20)), qos: rng.pick([0, 1, 2] as const), retain: rng.chance(0.3) };
    if (version === 5 && rng.chance(0.5)) packet.will.properties = { willDelayInterval: rng.pick([0, 1, 3600]), contentType: 'text/plain', userProperties: { a: 'b' } };
  }
  if (version === 5) {
    const properties: NonNullable<IConnectPacket['properties']> = {};
    if (rng.chance(0.4)) properties.sessionExpiryInterval = rng.pick([0, 1, 60, 0xffffffff]);
    if (rng.chance(0.3)) properties.receiveMaximum = rng.pick([1, 10, 65535]);
    if (rng.chance(0.3)) properties.maximumPacketSize = rng.pick([64, 128, 1024, 268435455]);
    if (rng.chance(0.3)) properties.topicAliasMaximum = rng.pick([0, 1, 10, 65535]);
    if (rng.chance(0.2)) properties.requestProblemInformation = rng.chance(0.5);
    if (rng.chance(0.2)) properties.requestResponseInformation = rng.chance(0.5);
    if (rng.chance(0.2)) properties.userProperties = { device: 'fuzz', list: ['a', 'b'] };
    if (Object.keys(properties).length > 0) packet.properties = properties;
  }
  return packet;
}

function topicName(rng: Rng, key: string): string {
  if (rng.chance(0.8)) return rng.pick([`${key}/t`, key, `${key}/a/b/c`, `${key}/${rng.text(rng.range(1, 12))}`, `${key}/ü/€`, `${key}//x`, `${key}/x/`]);
  return rng.pick(['other/x', '$SYS/x', `${key}x/t`, '/', `${key}/${'l/'.repeat(200)}`, `${key}/${'x'.repeat(5000)}`, `${key}/nul\u0000`, `${key}/+`, `${key}/#`, '#', '+']);
}

function topicFilter(rng: Rng, key: string): string {
  return rng.pick([`${key}/#`, `${key}/+/x`, key, `${key}/t`, '#', '+/x', '$SYS/#', `$share/g/${key}/x`, `${key}/#/x`, `${key}/a+`, '', `${key}/${'+/'.repeat(50)}#`, '+', `${key}/\u0000`]);
}

function payload(rng: Rng): Buffer {
  switch (rng.int(6)) {
    case 0:
      return Buffer.alloc(0);
    case 1:
      return Buffer.from(JSON.stringify({ t: rng.int(100), ok: rng.chance(0.5) }));
    case 2:
      return rng.bytes(rng.range(1, 64));
    case 3:
      return Buffer.alloc(rng.pick([1000, 10_000, 100_000]), 0x61);
    case 4:
      return rng.pick(INVALID_UTF8);
    default:
      return Buffer.from(`reading ${rng.int(1000)}`);
  }
}

function publishProperties(rng: Rng, key: string): NonNullable<Extract<Packet, { cmd: 'publish' }>['properties']> {
  const properties: NonNullable<Extract<Packet, { cmd: 'publish' }>['properties']> = {};
  if (rng.chance(0.3)) properties.payloadFormatIndicator = rng.chance(0.5);
  if (rng.chance(0.3)) properties.messageExpiryInterval = rng.pick([0, 1, 60, 0xffffffff]);
  if (rng.chance(0.3)) properties.topicAlias = rng.pick([1, 2, 64, 0, 65, 65535]);
  if (rng.chance(0.3)) properties.responseTopic = rng.pick([`${key}/reply`, '#', '']);
  if (rng.chance(0.3)) properties.correlationData = rng.bytes(rng.range(0, 16));
  if (rng.chance(0.3)) properties.userProperties = rng.chance(0.8) ? { site: 'north', n: [String(rng.int(9)), 'x'] } : Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, 'v']));
  if (rng.chance(0.1)) properties.subscriptionIdentifier = rng.pick([1, 268435455]);
  if (rng.chance(0.3)) properties.contentType = rng.pick(['application/json', '', 'x'.repeat(300)]);
  return properties;
}

const reasonCode = (rng: Rng) => rng.pick([0x00, 0x04, 0x10, 0x80, 0x83, 0x87, 0x8e, 0x92, 0x97, 0xff]);

/** One valid step of a device's conversation, as packets. */
function validStep(rng: Rng, version: Version, key: string): Packet[] {
  const v5 = version === 5;
  const id = () => rng.range(1, 65535);
  const qos = rng.pick([0, 1, 2] as const);
  switch (rng.int(10)) {
    case 0:
    case 1:
    case 2: {
      const messageId = qos > 0 ? id() : undefined;
      const publish: Packet = { cmd: 'publish', topic: topicName(rng, key), payload: payload(rng), qos, retain: rng.chance(0.2), dup: rng.chance(0.1), ...(messageId ? { messageId } : {}), ...(v5 && rng.chance(0.6) ? { properties: publishProperties(rng, key) } : {}) };
      const packets: Packet[] = [publish];
      if (qos === 2 && rng.chance(0.8)) packets.push({ cmd: 'pubrel', messageId: messageId!, ...(v5 && rng.chance(0.3) ? { reasonCode: rng.pick([0, 0x92]), properties: { reasonString: 'r' } } : {}) });
      return packets;
    }
    case 3: {
      const subscriptions = Array.from({ length: rng.range(1, 4) }, () => ({ topic: topicFilter(rng, key), qos: rng.pick([0, 1, 2] as const), ...(v5 ? { nl: rng.chance(0.5), rap: rng.chance(0.5), rh: rng.int(3) } : {}) }));
      const properties = v5 && rng.chance(0.4) ? { ...(rng.chance(0.8) ? { userProperties: { a: 'b' } } : {}), ...(rng.chance(0.2) ? { subscriptionIdentifier: rng.range(1, 1000) } : {}) } : undefined;
      return [{ cmd: 'subscribe', messageId: id(), subscriptions, ...(properties ? { properties } : {}) }];
    }
    case 4:
      return [{ cmd: 'unsubscribe', messageId: id(), unsubscriptions: Array.from({ length: rng.range(1, 3) }, () => topicFilter(rng, key)), ...(v5 && rng.chance(0.3) ? { properties: { userProperties: { a: 'b' } } } : {}) }];
    case 5:
      return [{ cmd: 'pingreq' }];
    case 6: {
      // Subscribe to its own topic and publish there: the broker sends it back, and the device acknowledges (ids guessed).
      const own = `${key}/loop`;
      const messageId = id();
      const ack = rng.pick(['puback', 'pubrec', 'pubcomp', 'pubrel'] as const);
      return [
        { cmd: 'subscribe', messageId: id(), subscriptions: [{ topic: own, qos: rng.pick([1, 2] as const) }] },
        { cmd: 'publish', topic: own, payload: payload(rng), qos, retain: false, dup: false, ...(qos > 0 ? { messageId } : {}) },
        ...(qos === 2 ? [{ cmd: 'pubrel', messageId } as Packet] : []),
        { cmd: ack, messageId: rng.range(1, 4), ...(v5 && rng.chance(0.5) ? { reasonCode: reasonCode(rng) } : {}) },
      ];
    }
    case 7:
      return [{ cmd: rng.pick(['puback', 'pubrec', 'pubcomp', 'pubrel'] as const), messageId: id(), ...(v5 && rng.chance(0.5) ? { reasonCode: reasonCode(rng), properties: { reasonString: 'fuzz', userProperties: { x: 'y' } } } : {}) }];
    case 8:
      if (v5 && rng.chance(0.5)) {
        // A topic alias set, then used with an empty topic.
        const alias = rng.pick([1, 7, 64]);
        return [
          { cmd: 'publish', topic: `${key}/aliased`, payload: payload(rng), qos: 1, messageId: id(), retain: false, dup: false, properties: { topicAlias: alias } },
          { cmd: 'publish', topic: '', payload: payload(rng), qos, retain: false, dup: false, ...(qos > 0 ? { messageId: id() } : {}), properties: { topicAlias: rng.chance(0.8) ? alias : rng.range(1, 64) } },
        ];
      }
      return [{ cmd: 'pingreq' }, { cmd: 'pingreq' }];
    default:
      return [
        v5
          ? { cmd: 'disconnect', reasonCode: rng.pick([0x00, 0x04, 0x80, 0x8e]), ...(rng.chance(0.7) ? { properties: { ...(rng.chance(0.5) ? { sessionExpiryInterval: rng.pick([0, 10, 0xffffffff]) } : {}), reasonString: 'bye', userProperties: { why: 'fuzz' }, ...(rng.chance(0.2) ? { serverReference: 'elsewhere' } : {}) } } : {}) }
          : { cmd: 'disconnect' },
      ];
  }
}

function encode(packet: Packet, version: Version): Buffer | undefined {
  try {
    return generate(packet, { protocolVersion: version === 5 ? 5 : 4 });
  } catch {
    return undefined; // A combination mqtt-packet will not write (e.g. a topic alias with qos 0 and no topic in v3).
  }
}

// ---------------------------------------------------------------------------------------------------------
// Packet surgery

function varint(value: number): Buffer {
  const out: number[] = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0 && out.length < 4);
  return Buffer.from(out);
}

/** Fixed header: the remaining length and where the variable header starts; undefined when the length is malformed. */
function fixedHeader(packet: Buffer): { length: number; start: number } | undefined {
  let length = 0;
  let multiplier = 1;
  for (let i = 1; i < Math.min(packet.length, 5); i++) {
    length += (packet[i]! & 0x7f) * multiplier;
    multiplier *= 128;
    if ((packet[i]! & 0x80) === 0) return { length, start: i + 1 };
  }
  return undefined;
}

function withRemainingLength(packet: Buffer, body: Buffer): Buffer {
  return Buffer.concat([packet.subarray(0, 1), varint(body.length), body]);
}

/** The offset of an MQTT 5 packet's property length, or undefined when it has none. */
function propertiesAt(packet: Buffer): number | undefined {
  const header = fixedHeader(packet);
  if (!header) return undefined;
  const { start, length } = header;
  switch (packet[0]! >> 4) {
    case 1:
      return start + 10;
    case 3: {
      if (packet.length < start + 2) return undefined;
      const qos = (packet[0]! >> 1) & 3;
      return start + 2 + packet.readUInt16BE(start) + (qos > 0 ? 2 : 0);
    }
    case 8:
    case 10:
      return start + 2;
    case 4:
    case 5:
    case 6:
    case 7:
      return length >= 4 ? start + 3 : undefined;
    case 14:
    case 15:
      return length >= 2 ? start + 1 : undefined;
    default:
      return undefined;
  }
}

const PROPERTY_TYPES: readonly [number, 'byte' | 'u16' | 'u32' | 'varint' | 'str' | 'bin' | 'pair' | 'raw'][] = [
  [0x01, 'byte'], [0x02, 'u32'], [0x03, 'str'], [0x08, 'str'], [0x09, 'bin'], [0x0b, 'varint'], [0x11, 'u32'], [0x12, 'str'], [0x13, 'u16'],
  [0x15, 'str'], [0x16, 'bin'], [0x17, 'byte'], [0x18, 'u32'], [0x19, 'byte'], [0x1a, 'str'], [0x1c, 'str'], [0x1f, 'str'], [0x21, 'u16'],
  [0x22, 'u16'], [0x23, 'u16'], [0x24, 'byte'], [0x25, 'byte'], [0x26, 'pair'], [0x27, 'u32'], [0x28, 'byte'], [0x29, 'byte'], [0x2a, 'byte'],
  [0x00, 'raw'], [0x04, 'raw'], [0x7f, 'raw'], [0x80, 'raw'], [0xff, 'raw'],
];

function mqttString(rng: Rng): Buffer {
  const text = rng.chance(0.7) ? Buffer.from(rng.pick(['', 'x', 'fuzz', 'a/b', '#', '\u0000', 'é'.repeat(100)])) : rng.pick(INVALID_UTF8);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(rng.chance(0.9) ? text.length : rng.pick(INTERESTING_16));
  return Buffer.concat([length, text]);
}

/** One property (identifier and value), sometimes with a value of the wrong size or an unknown identifier. */
function property(rng: Rng): Buffer {
  const [id, kind] = rng.pick(PROPERTY_TYPES);
  let value: Buffer;
  switch (kind) {
    case 'byte':
      value = Buffer.from([rng.pick(INTERESTING_8)]);
      break;
    case 'u16':
      value = Buffer.alloc(2);
      value.writeUInt16BE(rng.pick(INTERESTING_16));
      break;
    case 'u32':
      value = Buffer.alloc(4);
      value.writeUInt32BE(rng.pick(INTERESTING_32));
      break;
    case 'varint':
      value = rng.chance(0.8) ? varint(rng.pick([0, 1, 127, 128, 16384, 268435455])) : Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f]);
      break;
    case 'str':
    case 'bin':
      value = mqttString(rng);
      break;
    case 'pair':
      value = Buffer.concat([mqttString(rng), mqttString(rng)]);
      break;
    default:
      value = rng.bytes(rng.int(6));
  }
  const bytes = Buffer.concat([Buffer.from([id]), rng.chance(0.1) ? value.subarray(0, rng.int(value.length + 1)) : value]);
  return rng.chance(0.15) ? Buffer.concat([bytes, bytes]) : bytes;
}

/** `packet` with properties inserted into its property block (lengths fixed up), or undefined if it has no block. */
function insertProperties(rng: Rng, packet: Buffer): Buffer | undefined {
  const at = propertiesAt(packet);
  const header = fixedHeader(packet);
  if (at === undefined || !header || at >= packet.length) return undefined;
  let propertyLength = 0;
  let multiplier = 1;
  let end = at;
  for (; end < Math.min(packet.length, at + 4); end++) {
    propertyLength += (packet[end]! & 0x7f) * multiplier;
    multiplier *= 128;
    if ((packet[end]! & 0x80) === 0) break;
  }
  end++;
  const inserted = Buffer.concat(Array.from({ length: rng.range(1, 3) }, () => property(rng)));
  const newLength = rng.chance(0.9) ? propertyLength + inserted.length : rng.pick([0, propertyLength, propertyLength + inserted.length + 1, 268435455]);
  const body = Buffer.concat([packet.subarray(header.start, at), varint(newLength), inserted, packet.subarray(end)]);
  return withRemainingLength(packet, body);
}

/** Packets no device should send after log-in, or that only a server sends. */
function foreignPacket(rng: Rng, version: Version, key: string): Buffer {
  const v = version === 5 ? 5 : 4;
  const candidates: (() => Buffer | undefined)[] = [
    () => encode(connectPacket(rng, version, key, true), version),
    () => encode({ cmd: 'connack', sessionPresent: false, ...(v === 5 ? { reasonCode: 0 } : { returnCode: 0 }) }, version),
    () => encode({ cmd: 'suback', messageId: 1, granted: [0, 1, 128] }, version),
    () => encode({ cmd: 'unsuback', messageId: 1, granted: v === 5 ? [0] : [] }, version),
    () => Buffer.from([0xd0, 0x00]),
    () => (v === 5 ? encode({ cmd: 'auth', reasonCode: rng.pick([0x00, 0x18, 0x19]), properties: { authenticationMethod: 'SCRAM-SHA-1', authenticationData: rng.bytes(8) } }, version) : Buffer.from([0xf0, 0x00])),
    () => Buffer.from([0x00, 0x00]),
    () => Buffer.from([0xf0, 0x00]),
    // Empty payload lists: a SUBSCRIBE or UNSUBSCRIBE with no topic filter ([MQTT-3.8.3-2], [MQTT-3.10.3-2]).
    () => (v === 5 ? Buffer.from([rng.pick([0x82, 0xa2]), 0x03, 0x00, 0x01, 0x00]) : Buffer.from([rng.pick([0x82, 0xa2]), 0x02, 0x00, 0x01])),
    // Packet identifier 0.
    () => (v === 5 ? Buffer.from([0x82, 0x08, 0x00, 0x00, 0x00, 0x00, 0x02, 0x61, 0x62, 0x01]) : Buffer.from([0x82, 0x07, 0x00, 0x00, 0x00, 0x02, 0x61, 0x62, 0x01])),
    () => (v === 5 ? Buffer.from([0x32, 0x07, 0x00, 0x01, 0x61, 0x00, 0x00, 0x00, 0x78]) : Buffer.from([0x32, 0x06, 0x00, 0x01, 0x61, 0x00, 0x00, 0x78])),
    // A header announcing more than the largest packet accepted.
    () => Buffer.concat([Buffer.from([0x30]), varint(rng.pick([262_145, 1_000_000, 268_435_455])), rng.bytes(32)]),
    // A remaining length of five bytes.
    () => Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x7f]),
  ];
  return rng.pick(candidates)() ?? Buffer.from([0xc0, 0x00]);
}

/** Mutates a list of encoded packets in place; returns what it did. */
function mutatePackets(rng: Rng, packets: Buffer[], version: Version, key: string): string[] {
  const done: string[] = [];
  const which = () => rng.int(packets.length);
  const rounds = rng.range(1, 3);
  for (let r = 0; r < rounds; r++) {
    const kind = rng.int(11);
    if (packets.length === 0 && kind !== 8) continue;
    switch (kind) {
      case 0:
      case 1: {
        const i = which();
        packets[i] = mutateBytes(rng, packets[i]!, 3);
        done.push(`bytes of packet ${i}`);
        break;
      }
      case 2: {
        const i = which();
        const header = fixedHeader(packets[i]!);
        if (!header) break;
        const actual = header.length;
        const length = rng.pick([0, 1, 2, Math.max(0, actual - 1), actual + 1, actual + 100, 127, 128, 16_383, 16_384, 2_097_151, 268_435_455, -1]);
        const lengthBytes = length < 0 ? Buffer.from([0xff, 0xff, 0xff, 0xff, 0x7f]) : varint(length);
        packets[i] = Buffer.concat([packets[i]!.subarray(0, 1), lengthBytes, packets[i]!.subarray(header.start)]);
        done.push(`remaining length of packet ${i}: ${actual} → ${length < 0 ? 'five-byte varint' : length}`);
        break;
      }
      case 3: {
        const i = which();
        const flags = rng.int(16);
        packets[i] = Buffer.concat([Buffer.from([(packets[i]![0]! & 0xf0) | flags]), packets[i]!.subarray(1)]);
        done.push(`flags of packet ${i}: ${flags}`);
        break;
      }
      case 4: {
        const i = which();
        const type = rng.int(16);
        packets[i] = Buffer.concat([Buffer.from([(type << 4) | (packets[i]![0]! & 0x0f)]), packets[i]!.subarray(1)]);
        done.push(`type of packet ${i}: ${type}`);
        break;
      }
      case 5: {
        const i = which();
        const changed = version === 5 ? insertProperties(rng, packets[i]!) : undefined;
        if (changed) {
          packets[i] = changed;
          done.push(`properties inserted into packet ${i}`);
        } else {
          packets[i] = mutateBytes(rng, packets[i]!, 2);
          done.push(`bytes of packet ${i}`);
        }
        break;
      }
      case 6: {
        const i = which();
        const times = rng.pick([2, 3, 10, 100]);
        packets.splice(i, 0, ...Array.from({ length: times - 1 }, () => packets[i]!));
        done.push(`packet ${i} × ${times}`);
        break;
      }
      case 7: {
        const i = which();
        packets.splice(i, 1);
        done.push(`packet ${i} dropped`);
        break;
      }
      case 8: {
        const i = rng.int(packets.length + 1);
        packets.splice(i, 0, foreignPacket(rng, version, key));
        done.push(`foreign packet at ${i}`);
        break;
      }
      case 9: {
        const i = which();
        const j = which();
        [packets[i], packets[j]] = [packets[j]!, packets[i]!];
        done.push(`packets ${i} and ${j} swapped`);
        break;
      }
      default: {
        const stream = Buffer.concat(packets);
        const cut = rng.int(stream.length + 1);
        packets.splice(0, packets.length, stream.subarray(0, cut));
        done.push(`stream cut at ${cut}/${stream.length}`);
      }
    }
  }
  return done;
}

// ---------------------------------------------------------------------------------------------------------
// Cases

/** A valid log-in, then a valid conversation mutated (about one case in ten is left valid). */
function afterLoginCase(rng: Rng, version: 4 | 5, slot: number): MqttCase {
  const key = deviceKey(`fz${version}`, slot);
  const connect = encode({ ...connectPacket(rng, version, key, true), clean: true, ...(version === 5 ? { properties: { sessionExpiryInterval: rng.pick([0, 0, 30]) } } : {}) }, version)!;
  const steps = (count: number, ending = true) => {
    const packets: Buffer[] = [];
    for (let s = 0; s < count; s++) for (const packet of validStep(rng, version, key)) {
      if (!ending && packet.cmd === 'disconnect') continue;
      const bytes = encode(packet, version);
      if (bytes) packets.push(bytes);
    }
    return packets;
  };
  // Half the cases first go some way into a valid conversation (subscriptions, QoS 2 flows in progress), so the mutated packets meet that state.
  const prefix = rng.chance(0.5) ? steps(rng.range(1, 3), false) : [];
  const packets = steps(rng.range(1, 4));
  const mutations = rng.chance(0.9) ? mutatePackets(rng, packets, version, key) : ['none (valid flow)'];
  if (prefix.length > 0) mutations.unshift(`${prefix.length} valid packet(s) first`);
  return { version, connect, loginFirst: true, writes: [...(prefix.length > 0 ? [Buffer.concat(prefix)] : []), ...chunks(rng, Buffer.concat(packets), 5)], mutations, close: rng.pick(['destroy', 'end', 'linger'] as const) };
}

let spareAddresses = false;

/** A mutated CONNECT (from 127.0.0.x, so failed log-ins do not throttle the other rounds' address), then a few valid packets. */
function connectCase(rng: Rng, index: number, slot: number): MqttCase {
  const version = rng.pick([3, 4, 5, 5] as const);
  const key = deviceKey('fzc', slot);
  let connect = encode(connectPacket(rng, version, key, false), version) ?? Buffer.from([0x10, 0x00]);
  const mutations: string[] = [];
  switch (rng.int(4)) {
    case 0: {
      const changed = version === 5 ? insertProperties(rng, connect) : undefined;
      if (changed) {
        connect = changed;
        mutations.push('CONNECT properties inserted');
        break;
      }
      connect = mutateBytes(rng, connect, 3);
      mutations.push('CONNECT bytes');
      break;
    }
    case 1: {
      const packets = [connect];
      mutations.push(...mutatePackets(rng, packets, version, key).map((m) => `CONNECT ${m}`));
      connect = Buffer.concat(packets);
      break;
    }
    default:
      // One small change more often than not: enough of these CONNECTs still log in to test what follows.
      connect = mutateBytes(rng, connect, rng.chance(0.6) ? 1 : 4);
      mutations.push('CONNECT bytes');
  }
  const after: Buffer[] = [];
  for (let s = rng.int(3); s > 0; s--) for (const packet of validStep(rng, version, key)) after.push(encode(packet, version) ?? Buffer.alloc(0));
  return {
    version,
    connect,
    loginFirst: false,
    writes: after.length > 0 ? chunks(rng, Buffer.concat(after), 3) : [],
    mutations,
    close: rng.pick(['destroy', 'end'] as const),
    ...(spareAddresses ? { localAddress: `127.0.0.${2 + (index % 250)}` } : {}),
  };
}

function show(input: MqttCase): string {
  const version = input.version === 5 ? 'MQTT 5' : input.version === 4 ? 'MQTT 3.1.1' : 'MQTT 3.1';
  return `${version}, ${input.mutations.join('; ')}; CONNECT ${hex(input.connect, 2048)}${input.loginFirst ? ' (accepted), then' : ' +'} ${input.writes.map((w) => hex(w, 4096)).join(' | ') || '(nothing)'}${input.localAddress ? ` from ${input.localAddress}` : ''}`;
}

/** The reason / return code of the first CONNACK in `bytes`, undefined until one has come. */
function connackCode(bytes: Buffer): number | undefined {
  if (bytes.length < 4 || bytes[0] !== 0x20) return undefined;
  const header = fixedHeader(bytes);
  return header && bytes.length > header.start + 1 ? bytes[header.start + 1] : undefined;
}

/** What the connections saw, for the round's summary. */
const tally = { connections: 0, accepted: 0, answered: 0, closedByService: 0 };
function summary(): string {
  const line = `${tally.connections} connections: log-in accepted ${tally.accepted}, packets answered after it ${tally.answered}, closed by the service ${tally.closedByService}`;
  Object.assign(tally, { connections: 0, accepted: 0, answered: 0, closedByService: 0 });
  return line;
}

/** One connection: the CONNECT, the CONNACK if asked to wait for it, the writes, a short wait for what comes back, the close. */
async function sendCase(context: Context, input: MqttCase): Promise<string | undefined> {
  const socket = net.connect({ port: context.port, host: '127.0.0.1', ...(input.localAddress ? { localAddress: input.localAddress } : {}) });
  let received = Buffer.alloc(0);
  let lastActivity = Date.now();
  let closed = false;
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    lastActivity = Date.now();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  try {
    await new Promise<void>((resolve) => {
      socket.once('connect', () => resolve());
      socket.once('close', () => resolve());
    });
    if (closed) return undefined;
    tally.connections++;
    socket.write(input.connect);
    if (input.loginFirst) {
      const deadline = Date.now() + 5000;
      while (connackCode(received) === undefined && !closed && Date.now() < deadline) await sleep(2);
      const code = connackCode(received);
      if (code !== 0) return `the valid log-in was not accepted (CONNACK ${code ?? 'none'}; received ${hex(received, 64)})`;
    }
    const afterLogin = received.length;
    for (const write of input.writes) {
      if (closed || socket.destroyed) break;
      socket.write(write);
      await sleep(0);
    }
    // Until the service closes the connection or has been quiet for 30 ms (at most 600 ms).
    lastActivity = Date.now();
    const deadline = Date.now() + 600;
    while (!closed && Date.now() < deadline && Date.now() - lastActivity < 30) await sleep(5);
    if (connackCode(received) === 0) tally.accepted++;
    if (input.loginFirst && received.length > afterLogin) tally.answered++;
    if (closed) tally.closedByService++;
    if (input.close === 'end') socket.end();
    if (input.close === 'linger') await sleep(50);
    return undefined;
  } finally {
    socket.destroy();
  }
}

/** Publishes with mqtt.js (QoS 1) and waits for the mqtt-publish event: MQTT still works for a valid device. */
async function control(context: Context, service: FuzzService, protocolVersion: 4 | 5): Promise<void> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${context.port}`, { username: 'fz-ctl', password: PASSWORD, protocolVersion, reconnectPeriod: 0, connectTimeout: 10_000, clientId: `control-${protocolVersion}` });
  try {
    const nonce = `control ${protocolVersion} ${Date.now()} ${Math.random()}`;
    await client.publishAsync('fz-ctl/control', nonce, { qos: 1 });
    await eventSeen(service, context.token, context.controlId, 'mqtt-publish', (data) => data.text === nonce);
  } finally {
    await client.endAsync(true).catch(() => undefined);
  }
}

describe('fuzz: MQTT 3.1.1 and 5 (the service in its own process)', () => {
  const fuzzer = new Fuzzer<Context>({
    async setup(service) {
      const account = await fuzzAccount(service, 'fuzz-mqtt');
      const serviceId = await fuzzService(service, account.token, { name: 'fuzz-mqtt', type: 'mqtt' });
      const keys = ['fz-ctl', ...[4, 5].flatMap((v) => Array.from({ length: CONCURRENCY }, (_, slot) => deviceKey(`fz${v}`, slot))), ...Array.from({ length: CONCURRENCY }, (_, slot) => deviceKey('fzc', slot))];
      const ids = await Promise.all(keys.map((key) => fuzzEndpoint(service, account.token, { key, serviceId }, PASSWORD)));
      return { token: account.token, controlId: ids[0]!, port: service.ports.mqtt! };
    },
  });

  before(async () => {
    spareAddresses = await new Promise<boolean>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const socket = net.connect({ port: (probe.address() as net.AddressInfo).port, host: '127.0.0.1', localAddress: '127.0.0.2' });
        socket.once('connect', () => (socket.destroy(), probe.close(), resolve(true)));
        socket.once('error', () => (probe.close(), resolve(false)));
      });
    });
    await fuzzer.start();
  });
  after(() => fuzzer.stop());

  const round = <I>(spec: RoundSpec<Context, I>) => fuzzer.test(spec);

  it(
    'MQTT 3.1.1: mutated packets after a valid log-in',
    round<MqttCase>({
      name: 'mqtt311-after-login',
      count: 250,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => afterLoginCase(rng, 4, slot),
      show,
      send: (context, input) => sendCase(context, input),
      control: (context, service) => control(context, service, 4),
      summary,
    }),
  );

  it(
    'MQTT 5: mutated packets (properties, reason codes, aliases, empty lists) after a valid log-in',
    round<MqttCase>({
      name: 'mqtt5-after-login',
      count: 350,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => afterLoginCase(rng, 5, slot),
      show,
      send: (context, input) => sendCase(context, input),
      control: (context, service) => control(context, service, 5),
      summary,
    }),
  );

  it(
    'MQTT 3.1, 3.1.1 and 5: mutated CONNECT packets',
    round<MqttCase>({
      name: 'mqtt-connect',
      count: 200,
      concurrency: CONCURRENCY,
      generate: (rng, index, slot) => connectCase(rng, index, slot),
      show,
      send: (context, input) => sendCase(context, input),
      control: async (context, service) => {
        await control(context, service, 4);
        await control(context, service, 5);
      },
      summary,
    }),
  );

  it('the fuzzed devices were served: their log-ins produced on-connect events', async () => {
    const history = await fuzzer.service.request('GET', `/history?type=on-connect&limit=5`, { token: fuzzer.context.token });
    assert.equal(history.status, 200, history.text);
    assert.ok(history.json.items.length > 0, 'no on-connect event at all: the rounds never logged in');
  });
});
