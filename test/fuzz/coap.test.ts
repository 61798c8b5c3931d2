/**
 * CoAP fuzzing (docs/security.md "Fuzzing"): valid LwM2M Register / Update / Send / De-register messages and
 * plain CoAP requests, mutated at the message level (types, codes, tokens, options, queries, block options,
 * payloads in every LwM2M content format) and at the byte level, sent from fresh UDP sockets on loopback,
 * often after a valid registration. A 5.00 answer is a finding; the service's exit is a crash.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { decodeMessage, emptyMessage, encodeBlock, encodeMessage, option, OptionNumber, uriPathOptions, uriQueryOptions, type CoapCode, type CoapMessage, type CoapOption, type MessageType } from '../../src/coap/index.js';
import { encode } from '../../src/lwm2m/codecs/index.js';
import { CONTENT_FORMATS, type Lwm2mRecord } from '../../src/lwm2m/model.js';
import { ObjectRegistry } from '../../src/lwm2m/objects/registry.js';
import { eventSeen, fuzzAccount, fuzzEndpoint, fuzzService, Fuzzer, hex, INTERESTING_16, INTERESTING_32, mutateBytes, Rng, type FuzzService, type RoundSpec } from '../helpers/fuzz.js';

const CONCURRENCY = 6;

const deviceKey = (group: string, slot: number) => `${group}-dev-${slot}`;

interface Context {
  readonly token: string;
  readonly port: number;
  readonly plainControlId: string;
}

/** One message of a case: bytes, or a message built once the registration's location is known. */
type Step = { readonly kind: 'bytes'; readonly bytes: Buffer } | { readonly kind: 'after-register'; readonly make: (location: string) => Buffer };

interface CoapCase {
  readonly description: string;
  /** A valid Register of the slot's device comes first (its location then builds the `after-register` steps). */
  readonly register: Buffer | undefined;
  readonly steps: Step[];
  /** The datagrams actually sent, for the report. */
  readonly sent: Buffer[];
}

// ---------------------------------------------------------------------------------------------------------
// Valid messages

const RECORDS: readonly Lwm2mRecord[] = [
  { path: '/3/0/0', type: 'string', value: 'IoT Bridge fuzz' },
  { path: '/3/0/9', type: 'integer', value: 95 },
  { path: '/3/0/7/0', type: 'integer', value: 3800 },
  { path: '/3303/0/5700', type: 'float', value: 21.5 },
  { path: '/3303/0/5701', type: 'string', value: 'Cel' },
  { path: '/3311/0/5850', type: 'boolean', value: true },
];

/** Send payloads in every content format a device may use, valid ones first. */
const SEND_PAYLOADS: readonly { format: number; payload: Buffer }[] = (() => {
  const models = new ObjectRegistry();
  const out: { format: number; payload: Buffer }[] = [];
  for (const format of [CONTENT_FORMATS.senmlJson, CONTENT_FORMATS.senmlCbor, CONTENT_FORMATS.lwm2mJson, CONTENT_FORMATS.lwm2mCbor, CONTENT_FORMATS.oldJson]) {
    out.push({ format, payload: Buffer.from(encode(format, RECORDS, { basePath: '/', models })) });
  }
  out.push({ format: CONTENT_FORMATS.tlv, payload: Buffer.from('c800144f6e6520726573', 'hex') });
  out.push({ format: CONTENT_FORMATS.text, payload: Buffer.from('21.5') });
  out.push({ format: CONTENT_FORMATS.cbor, payload: Buffer.from('f94d60', 'hex') });
  out.push({ format: CONTENT_FORMATS.opaque, payload: Buffer.from('0102', 'hex') });
  return out;
})();

const LINKS = [
  '</>;rt="oma.lwm2m";ct=11543,</1/0>,</3/0>,</3303/0>',
  '</1/0>,</3/0>',
  '</lwm2m>;rt="oma.lwm2m",</lwm2m/1/0>,</lwm2m/3/0>',
  '</3>;ver=1.1,</3/0>,</3303>;ver="1.0",</3303/0>,</3303/1>',
  '',
];

let messageIds = 1;
const nextId = () => (messageIds = (messageIds + 1) & 0xffff);

function request(rng: Rng, code: CoapCode, options: CoapOption[], payload: Buffer = Buffer.alloc(0), type: MessageType = 'CON'): CoapMessage {
  return { type, code, messageId: rng.int(0x10000), token: rng.bytes(rng.pick([0, 1, 4, 8])), options, payload };
}

function registerMessage(rng: Rng, key: string, valid: boolean): CoapMessage {
  const query = [`ep=${key}`, `lt=${rng.pick([60, 300, 86400])}`, `lwm2m=${rng.pick(['1.0', '1.1', '1.2'])}`, `b=${rng.pick(['U', 'UQ', 'US'])}`];
  if (!valid && rng.chance(0.3)) query.push('Q');
  return request(rng, '0.02', [...uriPathOptions('/rd'), ...uriQueryOptions(query), option(OptionNumber.ContentFormat, CONTENT_FORMATS.linkFormat)], Buffer.from(rng.pick(LINKS)));
}

function locationOptions(location: string): CoapOption[] {
  return location.split('/').filter(Boolean).map((part) => option(OptionNumber.UriPath, part));
}

function updateMessage(rng: Rng, location: string): CoapMessage {
  const query = rng.chance(0.5) ? [`lt=${rng.pick([30, 600])}`] : rng.chance(0.5) ? ['b=UQ'] : [];
  const withLinks = rng.chance(0.3);
  return request(rng, '0.02', [...locationOptions(location), ...uriQueryOptions(query), ...(withLinks ? [option(OptionNumber.ContentFormat, CONTENT_FORMATS.linkFormat)] : [])], withLinks ? Buffer.from(rng.pick(LINKS)) : Buffer.alloc(0));
}

function sendMessage(rng: Rng): CoapMessage {
  const { format, payload } = rng.pick(SEND_PAYLOADS);
  return request(rng, '0.02', [...uriPathOptions('/dp'), option(OptionNumber.ContentFormat, format)], payload);
}

function plainMessage(rng: Rng, key: string): CoapMessage {
  const method = rng.pick(['0.01', '0.02', '0.03', '0.04', '0.05', '0.06', '0.07'] as const);
  const byPath = rng.chance(0.5);
  const options: CoapOption[] = byPath ? uriPathOptions(`/d/${key}/${rng.pick(['config', 'telemetry', 'a/b'])}`) : [...uriPathOptions(`/${rng.pick(['telemetry', 'x', 'up/link'])}`), ...uriQueryOptions([`ep=${key}`, ...(rng.chance(0.3) ? ['a=1'] : [])])];
  if (rng.chance(0.3)) options.push(option(OptionNumber.ContentFormat, rng.pick([0, 42, 50, 60, 110])));
  if (method === '0.01' && rng.chance(0.3)) options.push(option(OptionNumber.Observe, rng.pick([0, 1])));
  if (rng.chance(0.2)) options.push(option(OptionNumber.Accept, rng.pick([0, 50, 11542])));
  const payload = method === '0.01' ? Buffer.alloc(0) : rng.chance(0.5) ? Buffer.from(`reading=${rng.int(100)}`) : rng.bytes(rng.range(1, 64));
  return request(rng, method, options, payload, rng.chance(0.8) ? 'CON' : 'NON');
}

/** A Block1 upload of a plain CoAP body, as a series of messages. */
function block1Upload(rng: Rng, key: string): CoapMessage[] {
  const szx = rng.range(0, 6);
  const size = 16 << szx;
  const body = Buffer.alloc(rng.range(1, 4) * size + rng.int(size), 0x62);
  const count = Math.ceil(body.length / size);
  const token = rng.bytes(4);
  return Array.from({ length: count }, (_, num) => ({
    type: 'CON' as const,
    code: '0.03' as const,
    messageId: rng.int(0x10000),
    token,
    options: [...uriPathOptions(`/d/${key}/upload`), option(OptionNumber.Block1, encodeBlock({ num, more: num < count - 1, szx }))],
    payload: body.subarray(num * size, (num + 1) * size),
  }));
}

// ---------------------------------------------------------------------------------------------------------
// Mutation

const OPTION_NUMBERS = [1, 3, 4, 5, 6, 7, 8, 11, 12, 14, 15, 17, 20, 23, 27, 28, 35, 39, 60, 258, 284, 2049, 2053, 65000, 65535] as const;

function optionValue(rng: Rng, number: number): Buffer {
  switch (rng.int(6)) {
    case 0:
      return Buffer.alloc(0);
    case 1: {
      const value = Buffer.alloc(4);
      value.writeUInt32BE(rng.pick(INTERESTING_32));
      return value.subarray(rng.int(4));
    }
    case 2: {
      const value = Buffer.alloc(2);
      value.writeUInt16BE(rng.pick(INTERESTING_16));
      return value;
    }
    case 3:
      return Buffer.alloc(rng.pick([255, 256, 269, 1034, 2000]), 0x61);
    case 4:
      return number === 12 || number === 17 || number === 60 ? Buffer.from([rng.int(256)]) : rng.bytes(rng.range(1, 8));
    default:
      return Buffer.from(rng.pick(['..', '%', '%zz', '%E0%A4%A', 'ep=', 'ep=%', 'ep=%E0%A4%A', 'lt=-1', 'lt=99999999999999999999', 'lt=1e3', 'b=', 'b=X', 'lwm2m=9.9', 'lwm2m=1.', 'Q', 'sms=+1', '\u0000', 'rd', 'dp', 'd']));
  }
}

const QUERY_MUTATIONS = ['ep=', 'ep=%', 'ep=%E0%A4%A', 'ep=%00', `ep=${'x'.repeat(257)}`, 'lt=-5', 'lt=0', 'lt=abc', 'lt=4294967296', 'lt=99999999999999999999999', 'b=', 'b=T', 'b=UQS', 'lwm2m=2.0', 'lwm2m=', 'lwm2m=1.1.1', 'Q', 'Q=1', 'sms=', 'ep', '=', '', '&&', 'ep=a&ep=b'];

function mutateMessage(rng: Rng, message: CoapMessage): CoapMessage {
  let { type, code, messageId, token, payload } = message;
  let options = [...message.options];
  for (let r = rng.range(1, 3); r > 0; r--) {
    switch (rng.int(11)) {
      case 0:
        type = rng.pick(['CON', 'NON', 'ACK', 'RST'] as const);
        break;
      case 1: {
        const cls = rng.pick([0, 0, 1, 2, 4, 5, 6, 7]);
        const detail = rng.int(32);
        code = `${cls}.${detail < 10 ? '0' : ''}${detail}` as CoapCode;
        break;
      }
      case 2:
        token = rng.bytes(rng.int(9));
        messageId = rng.pick([0, 1, 0xffff, messageId]);
        break;
      case 3:
        options.push(option(rng.pick(OPTION_NUMBERS), optionValue(rng, 0)));
        break;
      case 4:
        if (options.length > 0) options.splice(rng.int(options.length), 1);
        break;
      case 5:
        if (options.length > 0) {
          const at = rng.int(options.length);
          options[at] = option(options[at]!.number, rng.chance(0.5) ? optionValue(rng, options[at]!.number) : mutateBytes(rng, options[at]!.value, 2));
        }
        break;
      case 6:
        if (options.length > 0) {
          const copy = rng.pick(options);
          for (let i = rng.pick([1, 2, 50]); i > 0; i--) options.push(copy);
        }
        break;
      case 7: {
        const queries = options.filter((o) => o.number === OptionNumber.UriQuery);
        const replacement = option(OptionNumber.UriQuery, rng.pick(QUERY_MUTATIONS));
        if (queries.length > 0 && rng.chance(0.6)) options[options.indexOf(rng.pick(queries))] = replacement;
        else options.push(replacement);
        break;
      }
      case 8:
        options.push(option(rng.pick([OptionNumber.Block1, OptionNumber.Block2, 28, 60]), rng.chance(0.5) ? encodeBlock({ num: rng.pick([0, 1, 1000, 1048575]), more: rng.chance(0.5), szx: rng.range(0, 6) }) : Buffer.from([rng.int(256), rng.int(256), 0x0f].slice(0, rng.range(1, 3)))));
        break;
      case 9:
        payload = rng.chance(0.8) ? mutateBytes(rng, payload, 4) : Buffer.alloc(rng.pick([0, 1, 1025, 65_000]), 0x5a);
        break;
      default:
        options.push(option(rng.pick([OptionNumber.ContentFormat, OptionNumber.Accept, OptionNumber.Observe, OptionNumber.Size1]), optionValue(rng, 12)));
    }
  }
  if (code === '0.00' && rng.chance(0.5)) options = [];
  return { type, code, messageId, token, options, payload };
}

/** A message's datagram, mutated as a message, as bytes, both or neither. */
function mutated(rng: Rng, message: CoapMessage, strength: number): Buffer {
  let current = message;
  if (rng.chance(strength)) current = mutateMessage(rng, current);
  let bytes: Buffer;
  try {
    bytes = encodeMessage(current, 70_000);
  } catch {
    bytes = encodeMessage(message, 70_000);
  }
  return rng.chance(strength * 0.5) ? mutateBytes(rng, bytes, 3) : bytes;
}

// ---------------------------------------------------------------------------------------------------------
// Cases

function lwm2mSession(rng: Rng, slot: number): CoapCase {
  const key = deviceKey('fzl', slot);
  const steps: Step[] = [];
  for (let s = rng.range(1, 4); s > 0; s--) {
    const stepRng = rng.u32();
    const strength = rng.pick([0.3, 0.8, 1]);
    switch (rng.int(6)) {
      case 0:
      case 1:
        steps.push({ kind: 'after-register', make: (location) => mutated(new Rng(stepRng), updateMessage(new Rng(stepRng, 1), location), strength) });
        break;
      case 2:
      case 3:
        steps.push({ kind: 'bytes', bytes: mutated(rng, sendMessage(rng), strength) });
        break;
      case 4:
        steps.push({ kind: 'bytes', bytes: rng.chance(0.5) ? encodeMessage(emptyMessage('CON', rng.int(0x10000))) : mutateBytes(rng, encodeMessage(emptyMessage(rng.pick(['CON', 'ACK', 'RST'] as const), rng.int(0x10000))), 2) });
        break;
      default:
        steps.push({ kind: 'after-register', make: (location) => mutated(new Rng(stepRng), request(new Rng(stepRng, 1), '0.04', locationOptions(location)), strength) });
    }
  }
  return { description: `LwM2M session of ${key}: register, then ${steps.length} mutated message(s)`, register: encodeMessage(registerMessage(rng, key, true)), steps, sent: [] };
}

function plainCase(rng: Rng, slot: number): CoapCase {
  const key = deviceKey('fzp', slot);
  const messages = rng.chance(0.2) ? block1Upload(rng, key) : Array.from({ length: rng.range(1, 3) }, () => plainMessage(rng, key));
  const strength = rng.pick([0.3, 0.8, 1]);
  return { description: `plain CoAP requests of ${key}`, register: undefined, steps: messages.map((message) => ({ kind: 'bytes', bytes: mutated(rng, message, strength) })), sent: [] };
}

function rawCase(rng: Rng, slot: number): CoapCase {
  const templates: (() => CoapMessage)[] = [
    () => registerMessage(rng, rng.chance(0.5) ? deviceKey('fzl', slot) : `fza-${rng.text(6)}`, false),
    () => sendMessage(rng),
    () => plainMessage(rng, deviceKey('fzp', slot)),
    () => emptyMessage(rng.pick(['CON', 'NON', 'ACK', 'RST'] as const), rng.int(0x10000)),
    () => request(rng, rng.pick(['0.01', '0.02', '0.03', '0.04'] as const), uriPathOptions(rng.pick(['/rd/unknown', '/bs', '/', '/.well-known/core', '/rd', '/dp'])), rng.bytes(rng.int(16))),
  ];
  const count = rng.range(1, 3);
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    const bytes = encodeMessage(rng.pick(templates)());
    steps.push({ kind: 'bytes', bytes: rng.chance(0.5) ? mutateBytes(rng, bytes, 6) : mutated(rng, decodeMessage(bytes), 1) });
  }
  if (rng.chance(0.15)) steps.push({ kind: 'bytes', bytes: rng.bytes(rng.range(0, 40)) });
  return { description: 'datagrams mutated at the byte level (unregistered source; auto-provisioning names among them)', register: undefined, steps, sent: [] };
}

function show(input: CoapCase): string {
  const sent = input.sent.length > 0 ? input.sent : [...(input.register ? [input.register] : []), ...input.steps.flatMap((s) => (s.kind === 'bytes' ? [s.bytes] : []))];
  return `${input.description}; datagrams (hex): ${sent.map((d) => hex(d, 2048)).join(' | ')}`;
}

/** Sends a case's datagrams one by one from a fresh socket, waiting up to 150 ms for each one's answer; reports a 5.00 answer. */
async function sendCase(context: Context, input: CoapCase): Promise<string | undefined> {
  const socket = dgram.createSocket('udp4');
  const answers: { message: CoapMessage | undefined; datagram: Buffer }[] = [];
  let arrived: (() => void) | undefined;
  socket.on('message', (datagram) => {
    let message: CoapMessage | undefined;
    try {
      message = decodeMessage(datagram);
    } catch {
      message = undefined;
    }
    answers.push({ message, datagram });
    arrived?.();
  });
  socket.on('error', () => undefined);
  input.sent.length = 0;
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    /** Sends one datagram and waits up to 150 ms for its answer; `response` waits up to 5 s for the response itself (a separate one after an empty ACK included). */
    const send = async (datagram: Buffer, response = false): Promise<CoapMessage | undefined> => {
      input.sent.push(datagram);
      const before = answers.length;
      socket.send(datagram, context.port, '127.0.0.1');
      const deadline = Date.now() + (response ? 5000 : 150);
      const mid = datagram.length >= 4 ? datagram.readUInt16BE(2) : -1;
      const token = datagram.length >= 4 ? datagram.subarray(4, 4 + (datagram[0]! & 0x0f)) : Buffer.alloc(0);
      const matches = (message: CoapMessage | undefined) =>
        message !== undefined && (response ? message.code !== '0.00' && message.token.equals(token) : message.messageId === mid || (message.type !== 'ACK' && message.type !== 'RST'));
      for (;;) {
        const match = answers.slice(before).find((a) => matches(a.message));
        if (match?.message?.type === 'CON') socket.send(encodeMessage(emptyMessage('ACK', match.message.messageId)), context.port, '127.0.0.1');
        if (match || Date.now() >= deadline) return match?.message;
        await new Promise<void>((resolve) => {
          arrived = resolve;
          setTimeout(resolve, Math.max(1, deadline - Date.now()));
        });
      }
    };
    let location: string | undefined;
    if (input.register) {
      const registered = await send(input.register, true);
      if (registered?.code !== '2.01') return `the valid Register was answered ${registered?.code ?? 'not at all within 5 s'}`;
      location = registered.options.filter((o) => o.number === OptionNumber.LocationPath).map((o) => o.value.toString()).join('/');
    }
    for (const step of input.steps) await send(step.kind === 'bytes' ? step.bytes : step.make(location ?? 'rd/none'));
    await sleep(20);
    const failed = answers.filter((a) => a.message && a.message.code.startsWith('5.') && a.message.code !== '5.05' && a.message.code !== '5.03');
    if (failed.length > 0) return `answered ${failed.map((a) => `${a.message!.code} (${hex(a.datagram, 64)})`).join(', ')}: a server error`;
    return undefined;
  } finally {
    socket.close();
  }
}

/** A plain CoAP POST still becomes an event, and an LwM2M device still registers. */
async function control(context: Context, service: FuzzService): Promise<void> {
  const nonce = `control ${Date.now()} ${Math.random()}`;
  const post: CoapCase = { description: 'control', register: undefined, steps: [{ kind: 'bytes', bytes: encodeMessage({ type: 'CON', code: '0.02', messageId: nextId(), token: Buffer.from('ctl0'), options: [...uriPathOptions('/control'), ...uriQueryOptions(['ep=fzp-ctl'])], payload: Buffer.from(nonce) }) }], sent: [] };
  assert.equal(await sendCase(context, post), undefined);
  await eventSeen(service, context.token, context.plainControlId, 'coap-request', (data) => data.text === nonce);
  const register: CoapCase = { description: 'control register', register: encodeMessage({ type: 'CON', code: '0.02', messageId: nextId(), token: Buffer.from('ctl1'), options: [...uriPathOptions('/rd'), ...uriQueryOptions(['ep=fzl-ctl', 'lt=60', 'lwm2m=1.1'])], payload: Buffer.from('</3/0>') }), steps: [], sent: [] };
  assert.equal(await sendCase(context, register), undefined);
}

describe('fuzz: CoAP and LwM2M (the service in its own process)', () => {
  const fuzzer = new Fuzzer<Context>({
    async setup(service) {
      const account = await fuzzAccount(service, 'fuzz-coap');
      const lwm2m = await fuzzService(service, account.token, { name: 'fuzz-lwm2m', type: 'lwm2m' });
      const plain = await fuzzService(service, account.token, { name: 'fuzz-plain', type: 'coap' });
      for (let slot = 0; slot < CONCURRENCY; slot++) {
        await fuzzEndpoint(service, account.token, { key: deviceKey('fzl', slot), serviceId: lwm2m });
        await fuzzEndpoint(service, account.token, { key: deviceKey('fzp', slot), serviceId: plain });
      }
      await fuzzEndpoint(service, account.token, { key: 'fzl-ctl', serviceId: lwm2m });
      const plainControlId = await fuzzEndpoint(service, account.token, { key: 'fzp-ctl', serviceId: plain });
      // Another account auto-provisions LwM2M devices in forced queue mode: mutated names create endpoints.
      const auto = await fuzzAccount(service, 'fuzz-coap-auto');
      await fuzzService(service, auto.token, { name: 'fuzz-auto', type: 'lwm2m', options: { autoProvision: true, forceQueueMode: true } });
      return { token: account.token, port: service.ports.coap!, plainControlId };
    },
  });

  before(async () => {
    await fuzzer.start();
  });
  after(() => fuzzer.stop());

  const round = <I>(spec: RoundSpec<Context, I>) => fuzzer.test(spec);

  it(
    'LwM2M: a valid registration, then mutated Updates, Sends (every content format), pings and De-registers',
    round<CoapCase>({
      name: 'coap-lwm2m-session',
      count: 300,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => lwm2mSession(rng, slot),
      show,
      send: sendCase,
      control,
    }),
  );

  it(
    'plain CoAP: mutated requests (options, queries, Observe, Block1) of a known device',
    round<CoapCase>({ name: 'coap-plain', count: 300, concurrency: CONCURRENCY, generate: (rng, _index, slot) => plainCase(rng, slot), show, send: sendCase, control }),
  );

  it(
    'CoAP datagrams mutated at the byte level',
    round<CoapCase>({ name: 'coap-raw', count: 400, concurrency: CONCURRENCY, generate: (rng, _index, slot) => rawCase(rng, slot), show, send: sendCase, control }),
  );
});
