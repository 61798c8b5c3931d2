/**
 * DTLS 1.2 fuzzing of the CoAPS port (docs/security.md "Fuzzing"): the service in its own process, and
 * mutations of real datagrams. Before the rounds, libcoap's coap-client (OpenSSL PSK, GnuTLS PSK where
 * installed, OpenSSL certificate mode) talks to the service through a UDP relay on 127.0.0.1 that records
 * every datagram both ways: ClientHello without and with cookie, HelloVerifyRequest, the server's flights, the
 * client's ClientKeyExchange/ChangeCipherSpec/Finished flight, application data, alerts. The rounds send those,
 * mutated, from several source ports on 127.0.0.1 (the relay's own upstream port among them, where the
 * captured cookies are good):
 *
 *   dtls-records      record layer: header fields (type, version, epoch, sequence number, length; tls12_cid
 *                     records with random CIDs), duplicated, concatenated, dropped and cut records, handshake
 *                     fragment headers (huge lengths and offsets), bit flips, truncation, extension
 *   dtls-hello        ClientHellos: random and malformed extensions, cookie and session-id lengths, cipher
 *                     suites, compression, handshake and record headers; half with a cookie made for the port
 *   dtls-flight       a handshake in progress (cookie exchange first; PSK, ECDHE, Connection ID, resumption
 *                     attempts), then the captured client flights mutated, random fragments, alerts
 *   dtls-established  an established connection (a small PSK client of this file: CCM_8, extended master
 *                     secret, optional Connection IDs), sent authenticated garbage and unauthenticated records;
 *                     after each case an authenticated CoAP ping checks the connection still works
 *
 * A few cases of the hello and flight rounds go silent afterwards and wait for the server's retransmissions.
 * After every round (test/helpers/fuzz.ts): the process is alive, GET /health answers 200, coap-client-openssl
 * still shakes hands with a PSK and its POST arrives as a coap-request event, and RSS stayed bounded; the DTLS
 * transport's own counts (connections, handshakes in progress, cached sessions, read through the inspector)
 * are logged with the receive-buffer drops of the machine's UDP stack.
 *
 *   DTLS_FUZZ_DATAGRAMS=<n>  mutated datagrams over all rounds (default 100000; setup datagrams not counted)
 *   DTLS_FUZZ_RATE=<n>       datagrams per second at most, setup included (default 2500)
 *   DTLS_FUZZ_PROBE_EACH=1   established round: ping after every datagram (with FUZZ_CASE, names the datagram that ended a connection)
 *   FUZZ_SEED, FUZZ_CASE, FUZZ_STRICT, FUZZ_VERBOSE, FUZZ_RSS_*: as for every fuzz file (FUZZ_ITERATIONS
 *   scales the cases of a round, each case being 8 mutated datagrams)
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { CIPHER_SUITES, createProtection, keyBlockLength, splitKeyBlock, type RecordProtection } from '../../src/dtls/cipher-suites.js';
import { clientHello, clientKeyExchangePsk, connectionIdExtension, finished, handshakeHashInput, parseClientHello, parseConnectionIdExtension, parseServerHello } from '../../src/dtls/handshake-messages.js';
import { extendedMasterSecret, keyBlock, pskPreMasterSecret, verifyData } from '../../src/dtls/prf.js';
import { eventSeen, fuzzAccount, fuzzEndpoint, fuzzService, Fuzzer, hex, INTERESTING_16, mutateBytes, Rng, type FuzzService, type RoundSpec } from '../helpers/fuzz.js';

const skip = spawnSync('coap-client-openssl', ['-h']).error === undefined ? false : process.env.CI ? false : 'coap-client-openssl not installed (apt-get install libcoap3-bin)';
const GNUTLS = spawnSync('coap-client-gnutls', ['-h']).error === undefined;

function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not ${raw}`);
  return value;
}

const TOTAL_DATAGRAMS = positiveInteger('DTLS_FUZZ_DATAGRAMS', 100_000);
const RATE = positiveInteger('DTLS_FUZZ_RATE', 2500);
/** Replaying an established-connection case: ping after each datagram, to name the one after which it stopped answering. */
const PROBE_EACH = process.env.DTLS_FUZZ_PROBE_EACH === '1';
/** Mutated datagrams per case. */
const PER_CASE = 8;
const CONCURRENCY = 8;
const SHARES = { records: 0.3, hello: 0.25, flight: 0.25, established: 0.2 } as const;
const casesOf = (round: keyof typeof SHARES) => Math.max(1, Math.round((TOTAL_DATAGRAMS * SHARES[round]) / PER_CASE));

/** PSKs are given to coap-client as text (-k), so they are ASCII. */
const KEY = 'fuzz-dtls-key-16';
const KEY_BYTES = Buffer.from(KEY);
const CAPTURE_ID = 'fzd-capture';
const CONTROL_ID = 'fzd-control';
const ESTABLISHED_ID = 'fzd-established';
const PSK_CCM8 = 0xc0a8;
/** What the server offers (src/dtls/cipher-suites.ts), and some it does not. */
const SERVER_SUITES = [0xc0a8, 0xc0a4, 0x00a8, 0x00ae, 0xc0ae, 0xc0ac, 0xc02b, 0xc023] as const;
const OTHER_SUITES = [0x00a9, 0xccab, 0xc0a5, 0xc0a9, 0xc02c, 0xc024, 0xc0ad, 0xc0af, 0x002f, 0x0035, 0x1301, 0x00ff, 0x5600, 0x0000, 0xffff] as const;
const SEQ_MAX = 2n ** 48n - 1n;
/** Record sequence numbers at the edges of their ranges: the ends of 16, 32 and 48 bits. */
const SEQ_EDGES = [0n, 1n, 0xffffn, 0x10000n, 0xffffffffn, 0x100000000n, 2n ** 47n, SEQ_MAX - 15n, SEQ_MAX - 7n, SEQ_MAX - 3n, SEQ_MAX - 2n, SEQ_MAX - 1n, SEQ_MAX] as const;
const EMPTY = Buffer.alloc(0);

// ---------------------------------------------------------------------------------------------------------
// Wire format, written here rather than with the server's codecs: the fuzzer must write what they refuse.

/** A DTLS record; `lengthField` overrides the length written (the body is written whole anyway). */
interface Rec {
  type: number;
  version: number;
  epoch: number;
  seq: bigint;
  cid?: Buffer | undefined;
  body: Buffer;
  lengthField?: number | undefined;
}

const rec = (type: number, epoch: number, seq: bigint, body: Buffer): Rec => ({ type, version: 0xfefd, epoch, seq, body });

function recordBytes(r: Rec): Buffer {
  const cid = r.cid ?? EMPTY;
  const out = Buffer.alloc(13 + cid.length + r.body.length);
  out[0] = r.type & 0xff;
  out.writeUInt16BE(r.version & 0xffff, 1);
  out.writeUInt16BE(r.epoch & 0xffff, 3);
  out.writeUIntBE(Number(BigInt.asUintN(48, r.seq)), 5, 6);
  cid.copy(out, 11);
  out.writeUInt16BE((r.lengthField ?? r.body.length) & 0xffff, 11 + cid.length);
  r.body.copy(out, 13 + cid.length);
  return out;
}

const datagramOf = (records: readonly Rec[]): Buffer => Buffer.concat(records.map(recordBytes));

/** The records of a datagram as far as they frame (tls12_cid with `cidLength` CID bytes), and what is left. */
function splitRecords(datagram: Buffer, cidLength = 6): { records: Rec[]; rest: Buffer } {
  const records: Rec[] = [];
  let at = 0;
  while (datagram.length - at >= 13) {
    const type = datagram[at]!;
    const cidBytes = type === 25 ? cidLength : 0;
    if (datagram.length - at < 13 + cidBytes) break;
    const length = datagram.readUInt16BE(at + 11 + cidBytes);
    const start = at + 13 + cidBytes;
    if (start + length > datagram.length) break;
    const record: Rec = { type, version: datagram.readUInt16BE(at + 1), epoch: datagram.readUInt16BE(at + 3), seq: BigInt(datagram.readUIntBE(at + 5, 6)), body: datagram.subarray(start, start + length) };
    if (cidBytes > 0) record.cid = datagram.subarray(at + 11, at + 11 + cidBytes);
    records.push(record);
    at = start + length;
  }
  return { records, rest: datagram.subarray(at) };
}

/** A handshake fragment (RFC 6347 4.2.2): the header fields as written, whatever the body. */
interface Frag {
  msgType: number;
  length: number;
  seq: number;
  offset: number;
  fragLength: number;
  body: Buffer;
}

const whole = (msgType: number, seq: number, body: Buffer): Frag => ({ msgType, length: body.length, seq, offset: 0, fragLength: body.length, body });

function fragBytes(f: Frag): Buffer {
  const out = Buffer.alloc(12 + f.body.length);
  out[0] = f.msgType & 0xff;
  out.writeUIntBE(f.length & 0xffffff, 1, 3);
  out.writeUInt16BE(f.seq & 0xffff, 4);
  out.writeUIntBE(f.offset & 0xffffff, 6, 3);
  out.writeUIntBE(f.fragLength & 0xffffff, 9, 3);
  f.body.copy(out, 12);
  return out;
}

function splitFrags(body: Buffer): Frag[] {
  const frags: Frag[] = [];
  let at = 0;
  while (body.length - at >= 12) {
    const fragLength = body.readUIntBE(at + 9, 3);
    if (at + 12 + fragLength > body.length) break;
    frags.push({ msgType: body[at]!, length: body.readUIntBE(at + 1, 3), seq: body.readUInt16BE(at + 4), offset: body.readUIntBE(at + 6, 3), fragLength, body: body.subarray(at + 12, at + 12 + fragLength) });
    at += 12 + fragLength;
  }
  return frags;
}

interface Ext {
  type: number;
  data: Buffer;
}

/** A ClientHello body as fields (RFC 6347 4.2.1); `extensions` undefined: no extensions block at all. */
interface Hello {
  version: number;
  random: Buffer;
  sessionId: Buffer;
  cookie: Buffer;
  suites: number[];
  compression: number[];
  extensions: Ext[] | undefined;
}

function parseHello(body: Buffer): Hello | undefined {
  try {
    let at = 0;
    const take = (n: number) => {
      if (at + n > body.length) throw new Error('short');
      at += n;
      return body.subarray(at - n, at);
    };
    const vector = (lengthBytes: 1 | 2) => take(take(lengthBytes).readUIntBE(0, lengthBytes));
    const version = take(2).readUInt16BE(0);
    const random = Buffer.from(take(32));
    const sessionId = Buffer.from(vector(1));
    const cookie = Buffer.from(vector(1));
    const suiteBytes = vector(2);
    const suites: number[] = [];
    for (let i = 0; i + 1 < suiteBytes.length; i += 2) suites.push(suiteBytes.readUInt16BE(i));
    const compression = [...vector(1)];
    let extensions: Ext[] | undefined;
    if (at < body.length) {
      const block = vector(2);
      extensions = [];
      for (let i = 0; i + 4 <= block.length; ) {
        const length = block.readUInt16BE(i + 2);
        extensions.push({ type: block.readUInt16BE(i), data: Buffer.from(block.subarray(i + 4, i + 4 + length)) });
        i += 4 + length;
      }
    }
    return { version, random, sessionId, cookie, suites, compression, extensions };
  } catch {
    return undefined;
  }
}

function helloBytes(h: Hello): Buffer {
  const u8 = (n: number) => Buffer.from([n & 0xff]);
  const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
  const suites = Buffer.concat(h.suites.map(u16));
  const parts = [u16(h.version), h.random, u8(h.sessionId.length), h.sessionId, u8(h.cookie.length), h.cookie, u16(suites.length), suites, u8(h.compression.length), Buffer.from(h.compression.map((c) => c & 0xff))];
  if (h.extensions) {
    const block = Buffer.concat(h.extensions.map((e) => Buffer.concat([u16(e.type), u16(e.data.length), e.data])));
    parts.push(u16(block.length), block);
  }
  return Buffer.concat(parts);
}

/** The cookie of a HelloVerifyRequest in `datagram`, if it carries one. */
function cookieOf(datagram: Buffer): Buffer | undefined {
  for (const r of splitRecords(datagram).records) {
    if (r.type !== 22 || r.epoch !== 0) continue;
    for (const f of splitFrags(r.body)) {
      if (f.msgType !== 3 || f.body.length < 3) continue;
      const length = f.body[2]!;
      if (f.body.length >= 3 + length) return Buffer.from(f.body.subarray(3, 3 + length));
    }
  }
  return undefined;
}

/** Plaintext alerts (epoch 0) in a datagram from the server. */
function plainAlerts(datagram: Buffer): { level: number; description: number }[] {
  return splitRecords(datagram)
    .records.filter((r) => r.type === 21 && r.epoch === 0 && r.body.length === 2)
    .map((r) => ({ level: r.body[0]!, description: r.body[1]! }));
}

// ---------------------------------------------------------------------------------------------------------
// Sockets: paced, counted, with an inbox of the server's answers

interface Counts {
  fuzz: number;
  setup: number;
  answers: number;
  slow: number;
  /** Fatal internal_error alerts the server sent in clear (an exception other than a handshake failure). */
  internalErrors: number;
}

const counts: Counts = { fuzz: 0, setup: 0, answers: 0, slow: 0, internalErrors: 0 };

/** At most RATE datagrams per second from all sockets together; a sender behind schedule does not burst to catch up. */
class Pace {
  #next = 0;

  async take(): Promise<void> {
    const now = performance.now();
    this.#next = Math.max(this.#next + 1000 / RATE, now);
    const wait = this.#next - now;
    if (wait >= 2) await sleep(wait);
  }
}

const pace = new Pace();
const openPorts = new Set<Port>();

class Port {
  readonly inbox: Buffer[] = [];
  /** Sees every datagram first; returning true keeps it out of the inbox (the capture relay). */
  intercept: ((datagram: Buffer) => boolean) | undefined;
  /** When the server last sent a plaintext internal_error alert here (ms). */
  internalErrorAt = 0;
  /** Datagrams received here. */
  received = 0;
  #wake: (() => void) | undefined;

  private constructor(
    readonly socket: dgram.Socket,
    readonly port: number,
  ) {
    socket.on('message', (datagram) => {
      if (this.intercept?.(datagram)) return;
      counts.answers++;
      this.received++;
      if (plainAlerts(datagram).some((a) => a.level === 2 && a.description === 80)) {
        counts.internalErrors++;
        this.internalErrorAt = Date.now();
      }
      this.inbox.push(datagram);
      if (this.inbox.length > 256) this.inbox.shift();
      this.#wake?.();
    });
    socket.on('error', () => undefined);
  }

  static async open(): Promise<Port> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const port = new Port(socket, socket.address().port);
    openPorts.add(port);
    return port;
  }

  /** Sends one datagram (cut to what UDP carries), after the pace allows it. */
  async send(datagram: Buffer, target: number, kind: 'fuzz' | 'setup'): Promise<void> {
    await pace.take();
    counts[kind]++;
    const bytes = datagram.length > 65_507 ? datagram.subarray(0, 65_507) : datagram;
    await new Promise<void>((resolve) => this.socket.send(bytes, target, '127.0.0.1', () => resolve()));
  }

  drain(): void {
    this.inbox.length = 0;
  }

  /** The first datagram (already in the inbox or still to come) that `match` accepts, taken out of the inbox. */
  async next(match: (datagram: Buffer) => boolean, timeoutMs: number): Promise<Buffer | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = this.inbox.findIndex(match);
      if (at >= 0) return this.inbox.splice(at, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  close(): void {
    if (!openPorts.delete(this)) return;
    this.socket.close();
  }
}

/** RcvbufErrors of /proc/net/snmp: datagrams the kernel dropped for a full socket receive buffer (whole machine; Linux). */
function udpReceiveBufferErrors(): number | undefined {
  try {
    const lines = readFileSync('/proc/net/snmp', 'utf8').split('\n').filter((line) => line.startsWith('Udp:'));
    const names = lines[0]!.split(/\s+/);
    const values = lines[1]!.split(/\s+/);
    return Number(values[names.indexOf('RcvbufErrors')]);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Capture: coap-client through a recording relay

interface Captured {
  readonly from: 'client' | 'server';
  readonly bytes: Buffer;
}

interface Capture {
  readonly name: string;
  readonly kind: 'psk' | 'certificate';
  readonly datagrams: Captured[];
  readonly output: string;
}

function runClient(client: string, args: readonly string[], timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(client, ['-B', '3', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('latin1')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('latin1')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve(`${output}\n${error.message}`);
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(output);
    });
  });
}

/** One coap-client run through a relay whose upstream socket is `upstream` (a fuzz port afterwards). */
async function capture(name: string, kind: Capture['kind'], client: string, args: (relayPort: number) => string[], upstream: Port, target: number): Promise<Capture> {
  const down = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => down.bind(0, '127.0.0.1', () => resolve()));
  const datagrams: Captured[] = [];
  let peer: dgram.RemoteInfo | undefined;
  down.on('message', (bytes, from) => {
    peer = from;
    datagrams.push({ from: 'client', bytes: Buffer.from(bytes) });
    upstream.socket.send(bytes, target, '127.0.0.1');
  });
  upstream.intercept = (bytes) => {
    datagrams.push({ from: 'server', bytes: Buffer.from(bytes) });
    if (peer) down.send(bytes, peer.port, peer.address);
    return true;
  };
  try {
    const output = await runClient(client, args(down.address().port));
    return { name, kind, datagrams, output };
  } finally {
    upstream.intercept = undefined;
    down.close();
  }
}

/** What the rounds mutate, taken apart once. */
interface Material {
  readonly captures: Capture[];
  /** Every captured datagram, both directions. */
  readonly all: Buffer[];
  /** The captured ClientHellos (without and with cookie), with their message_seq and capture. */
  readonly hellos: { capture: Capture; hello: Hello; messageSeq: number; withCookie: boolean }[];
  /** A capture's client datagrams after its ClientHello with cookie (ClientKeyExchange, CCS, Finished, data, alerts). */
  readonly flights: Map<Capture, Buffer[]>;
  /** Session IDs of captured ServerHellos: the server's session cache knows them (resumption attempts). */
  readonly sessionIds: Buffer[];
}

function takeApart(captures: Capture[]): Material {
  const hellos: Material['hellos'] = [];
  const flights = new Map<Capture, Buffer[]>();
  const sessionIds: Buffer[] = [];
  for (const c of captures) {
    let afterCookie = false;
    const flight: Buffer[] = [];
    for (const d of c.datagrams) {
      let isHello = false;
      for (const r of splitRecords(d.bytes).records) {
        if (r.type !== 22 || r.epoch !== 0) continue;
        for (const f of splitFrags(r.body)) {
          if (d.from === 'client' && f.msgType === 1 && f.offset === 0 && f.fragLength === f.length) {
            const hello = parseHello(f.body);
            if (!hello) continue;
            isHello = true;
            hellos.push({ capture: c, hello, messageSeq: f.seq, withCookie: hello.cookie.length > 0 });
            if (hello.cookie.length > 0) afterCookie = true;
          }
          // ServerHello: version(2), random(32), session_id<0..32>.
          if (d.from === 'server' && f.msgType === 2 && f.body.length > 35) {
            const sid = f.body.subarray(35, 35 + f.body[34]!);
            if (sid.length > 0 && sid.length === f.body[34]) sessionIds.push(Buffer.from(sid));
          }
        }
      }
      if (d.from === 'client' && afterCookie && !isHello) flight.push(d.bytes);
    }
    flights.set(c, flight);
  }
  return { captures, all: captures.flatMap((c) => c.datagrams.map((d) => d.bytes)), hellos, flights, sessionIds };
}

// ---------------------------------------------------------------------------------------------------------
// A minimal PSK client (TLS_PSK_WITH_AES_128_CCM_8, extended master secret, RFC 9146 Connection IDs) on the
// project's record protection and PRF (checked against RFC vectors in test/unit and against libcoap above).

class PskConnection {
  #seq = 0n;
  /** Records we sent, kept to replay. */
  readonly sent: Buffer[] = [];

  constructor(
    readonly port: Port,
    readonly target: number,
    readonly write: RecordProtection,
    readonly read: RecordProtection,
    /** The server's CID: on our epoch-1 records. */
    readonly serverCid: Buffer | undefined,
    /** Ours: on the server's records. */
    readonly ownCid: Buffer,
  ) {}

  get nextSeq(): bigint {
    return this.#seq;
  }

  /** An epoch-1 record of `type` (inner type with a CID; 25 with a CID: `content` is the DTLSInnerPlaintext itself). */
  seal(type: number, content: Buffer, options: { seq?: bigint; cid?: Buffer | undefined } = {}): Buffer {
    const seq = options.seq ?? this.#seq++;
    const cid = 'cid' in options ? options.cid : this.serverCid?.length ? this.serverCid : undefined;
    const header = { contentType: type, version: 0xfefd, epoch: 1, sequenceNumber: seq, ...(cid && { cid }) };
    const body = this.write.encrypt(header, content);
    const record = recordBytes({ type: cid ? 25 : type, version: 0xfefd, epoch: 1, seq, cid, body });
    this.sent.push(record);
    if (this.sent.length > 32) this.sent.shift();
    return record;
  }

  /** The authenticated contents of the server's epoch-1 records in `datagram`. */
  open(datagram: Buffer): { type: number; content: Buffer }[] {
    const out: { type: number; content: Buffer }[] = [];
    for (const r of splitRecords(datagram, this.ownCid.length).records) {
      if (r.epoch !== 1) continue;
      const opened = this.read.open({ contentType: r.type, version: r.version, epoch: r.epoch, sequenceNumber: r.seq, ...(r.cid && { cid: r.cid }) }, r.body);
      if (opened) out.push(opened);
    }
    return out;
  }

  /** An authenticated CoAP ping (empty CON) answered with RST: the connection works. */
  async alive(): Promise<boolean> {
    for (const waitMs of [150, 300]) {
      const mid = 0x8000 | (Number(this.#seq) & 0x7fff);
      const reset = Buffer.from([0x70, 0x00, mid >> 8, mid & 0xff]);
      await this.port.send(this.seal(23, Buffer.from([0x40, 0x00, mid >> 8, mid & 0xff])), this.target, 'setup');
      if (await this.port.next((d) => this.open(d).some((m) => m.type === 23 && m.content.equals(reset)), waitMs)) return true;
    }
    return false;
  }

  async close(): Promise<void> {
    await this.port.send(this.seal(21, Buffer.from([1, 0])), this.target, 'setup').catch(() => undefined);
    this.port.close();
  }
}

async function pskHandshake(target: number, identity: string, cid: 'none' | 'server' | 'both'): Promise<PskConnection | string> {
  const port = await Port.open();
  const fail = (why: string) => {
    port.close();
    return why;
  };
  const random = randomBytes(32);
  const ownCid = cid === 'both' ? randomBytes(4) : EMPTY;
  const extensions = [{ type: 23, data: EMPTY }, ...(cid === 'none' ? [] : [{ type: 54, data: connectionIdExtension(ownCid) }])];
  let seq0 = 0n;
  const plain = (frag: Frag) => recordBytes(rec(22, 0, seq0++, fragBytes(frag)));
  await port.send(plain(whole(1, 0, clientHello({ random, cipherSuites: [PSK_CCM8], extensions }))), target, 'setup');
  const verify = await port.next((d) => cookieOf(d) !== undefined, 1000);
  if (!verify) return fail('no HelloVerifyRequest');
  const hello = clientHello({ random, cookie: cookieOf(verify)!, cipherSuites: [PSK_CCM8], extensions });
  const transcript = [handshakeHashInput(1, 1, hello)];
  await port.send(plain(whole(1, 1, hello)), target, 'setup');
  const flight = new Map<number, Frag>();
  const deadline = Date.now() + 1500;
  while (!flight.has(2) || !flight.has(14)) {
    const d = await port.next(() => true, deadline - Date.now());
    if (!d) return fail(`no ServerHello flight (had message types ${[...flight.keys()].join(',')})`);
    for (const r of splitRecords(d).records) if (r.type === 22 && r.epoch === 0) for (const f of splitFrags(r.body)) if (f.offset === 0 && f.fragLength === f.length) flight.set(f.msgType, f);
  }
  const [sh, done] = [flight.get(2)!, flight.get(14)!];
  transcript.push(handshakeHashInput(2, sh.seq, sh.body), handshakeHashInput(14, done.seq, done.body));
  const serverHello = parseServerHello(sh.body);
  if (serverHello?.cipherSuite !== PSK_CCM8) return fail('unexpected ServerHello');
  const cidExtension = serverHello.extensions.get(54);
  const serverCid = cidExtension ? parseConnectionIdExtension(cidExtension) : undefined;
  const exchange = clientKeyExchangePsk(Buffer.from(identity));
  // The client's message_seq: ClientHellos 0 and 1, ClientKeyExchange 2, Finished 3 (the server counts its own).
  transcript.push(handshakeHashInput(16, 2, exchange));
  const hash = () => createHash('sha256').update(Buffer.concat(transcript)).digest();
  const master = extendedMasterSecret(pskPreMasterSecret(KEY_BYTES), hash());
  const suite = CIPHER_SUITES.get(PSK_CCM8)!;
  const keys = splitKeyBlock(suite, keyBlock(master, serverHello.random, random, keyBlockLength(suite)));
  const format = { format: 'rfc9146' as const };
  const connection = new PskConnection(port, target, createProtection(suite, keys.client, serverCid?.length ? format : undefined), createProtection(suite, keys.server, ownCid.length ? format : undefined), serverCid, ownCid);
  const fin = fragBytes(whole(20, 3, finished(verifyData(master, 'client finished', hash()))));
  await port.send(Buffer.concat([plain(whole(16, 2, exchange)), recordBytes(rec(20, 0, seq0++, Buffer.from([1]))), connection.seal(22, fin)]), target, 'setup');
  if (!(await port.next((d) => connection.open(d).some((m) => m.type === 22), 1500))) return fail('no server Finished');
  return connection;
}

// ---------------------------------------------------------------------------------------------------------
// Mutation

const EXTENSION_TYPES = [0, 1, 5, 10, 11, 13, 15, 16, 19, 20, 21, 22, 23, 28, 35, 41, 43, 45, 51, 53, 54, 254, 0xff01, 0xfe0d, 0xffff] as const;

function vector1(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from([data.length & 0xff]), data]);
}

function vector2(data: Buffer): Buffer {
  const out = Buffer.alloc(2 + data.length);
  out.writeUInt16BE(data.length & 0xffff);
  data.copy(out, 2);
  return out;
}

function u16s(values: readonly number[]): Buffer {
  const out = Buffer.alloc(values.length * 2);
  values.forEach((v, i) => out.writeUInt16BE(v & 0xffff, i * 2));
  return out;
}

/** Extension data: well-formed for the type, or empty, short, long, mis-sized. */
function extensionData(rng: Rng, type: number): Buffer {
  switch (rng.int(7)) {
    case 0:
      return EMPTY;
    case 1:
      return rng.bytes(rng.range(1, 8));
    case 2:
      return Buffer.alloc(rng.pick([255, 256, 1000, 4000]), rng.int(256));
    case 3: {
      const n = rng.range(0, 12);
      return Buffer.concat([Buffer.from([rng.chance(0.7) ? n : rng.int(256)]), rng.bytes(n)]);
    }
    case 4: {
      const n = rng.range(0, 6) * 2 + (rng.chance(0.2) ? 1 : 0);
      const out = Buffer.alloc(2 + n);
      out.writeUInt16BE(rng.chance(0.7) ? n : rng.pick(INTERESTING_16));
      rng.bytes(n).copy(out, 2);
      return out;
    }
    default:
      switch (type) {
        case 10:
          return vector2(u16s(rng.chance(0.5) ? [23] : [29, 24, rng.int(0x10000)]));
        case 11:
          return vector1(Buffer.from(rng.chance(0.5) ? [0] : [1, 2]));
        case 13:
          return vector2(u16s(rng.chance(0.5) ? [0x0403] : [0x0804, 0x0503]));
        case 54:
        case 254:
          return vector1(rng.bytes(rng.pick([0, 1, 4, 6, 8, 20, 32, 255])));
        case 0xff01:
          return vector1(rng.chance(0.5) ? EMPTY : rng.bytes(12));
        default:
          return rng.bytes(rng.range(0, 4));
      }
  }
}

/** A ClientHello changed in one to three of its fields; `sessionIds` are ones the server cached. */
function mutateHello(rng: Rng, input: Hello, sessionIds: readonly Buffer[]): Hello {
  const h: Hello = { ...input, suites: [...input.suites], compression: [...input.compression], extensions: input.extensions?.map((e) => ({ ...e })) };
  for (let r = rng.range(1, 3); r > 0; r--) {
    switch (rng.int(12)) {
      case 0:
        h.version = rng.pick([0xfefd, 0xfeff, 0xfefc, 0xfe00, 0x0303, 0x0301, 0xffff, 0x0000]);
        break;
      case 1:
        h.random = rng.chance(0.5) ? rng.bytes(32) : Buffer.alloc(32);
        break;
      case 2:
        h.sessionId = rng.chance(0.4) && sessionIds.length > 0 ? rng.pick(sessionIds) : rng.bytes(rng.pick([0, 1, 16, 32, 33, 255]));
        break;
      case 3:
        h.cookie = rng.bytes(rng.pick([0, 1, 16, 31, 32, 33, 64, 255]));
        break;
      case 4:
        switch (rng.int(7)) {
          case 0:
            h.suites = [rng.pick(OTHER_SUITES)];
            break;
          case 1:
            h.suites = [];
            break;
          case 2:
            h.suites = Array.from({ length: rng.pick([100, 1000, 16_000]) }, () => rng.int(0x10000));
            break;
          case 3:
            h.suites = [rng.pick(SERVER_SUITES)];
            break;
          case 4:
            h.suites = [...SERVER_SUITES.filter((s) => s >= 0xc023 && s !== 0xc0a8 && s !== 0xc0a4 && s !== 0x00a8 && s !== 0x00ae)];
            break;
          case 5:
            h.suites.push(0x00ff, ...h.suites);
            break;
          default:
            h.suites.reverse();
        }
        break;
      case 5:
        h.compression = rng.pick([[], [1], [0, 1], [1, 0], Array.from({ length: 255 }, (_, i) => i)]);
        break;
      case 6:
        h.extensions ??= [];
        for (let n = rng.range(1, 5); n > 0; n--) {
          const type = rng.chance(0.7) ? rng.pick(EXTENSION_TYPES) : rng.int(0x10000);
          h.extensions.splice(rng.int(h.extensions.length + 1), 0, { type, data: extensionData(rng, type) });
        }
        break;
      case 7:
        if (h.extensions && h.extensions.length > 0 && rng.chance(0.7)) h.extensions.splice(rng.int(h.extensions.length), 1);
        else h.extensions = rng.chance(0.5) ? undefined : [];
        break;
      case 8:
        if (h.extensions && h.extensions.length > 0) h.extensions.push({ ...rng.pick(h.extensions) });
        break;
      case 9:
        if (h.extensions && h.extensions.length > 0) {
          const e = rng.pick(h.extensions);
          e.data = extensionData(rng, e.type);
        }
        break;
      case 10: {
        h.extensions = (h.extensions ?? []).filter((e) => e.type !== 54 && e.type !== 254);
        const type = rng.chance(0.7) ? 54 : 254;
        h.extensions.push({ type, data: rng.chance(0.8) ? vector1(rng.bytes(rng.pick([0, 1, 4, 6, 16, 255]))) : extensionData(rng, type) });
        break;
      }
      default:
        h.extensions = [...(h.extensions ?? []), ...Array.from({ length: rng.pick([50, 200, 1000]) }, (_, i) => ({ type: 0x1000 + i, data: rng.chance(0.1) ? rng.bytes(4) : EMPTY }))];
    }
  }
  return h;
}

/** A handshake fragment's header fields changed: lengths, offsets, message_seq, type. */
function mutateFrag(rng: Rng, f: Frag): Frag {
  const out = { ...f };
  switch (rng.int(7)) {
    case 0:
      out.length = rng.pick([0, f.body.length + 1, f.body.length - 1, 0x4000, 0x4001, 0xffff, 0x10000, 0xffffff]);
      break;
    case 1:
      out.offset = rng.pick([1, f.length, f.length - 1, 0x3fff, 0xfffff0, 0xffffff]);
      break;
    case 2:
      out.fragLength = rng.pick([0, f.body.length + 1, f.body.length - 1, 0xffffff]);
      break;
    case 3:
      out.seq = rng.pick([0, 1, 2, 3, 4, 5, 8, 9, 0x7fff, 0xfffe, 0xffff, f.seq + 1, f.seq - 1]);
      break;
    case 4:
      out.msgType = rng.pick([0, 1, 2, 3, 4, 11, 12, 13, 14, 15, 16, 20, 21, 255]);
      break;
    case 5:
      out.body = mutateBytes(rng, f.body, 3);
      out.length = out.body.length;
      out.fragLength = out.body.length;
      break;
    default:
      out.length = rng.pick([0xffffff, 0x4000, 1 << 20]);
      out.offset = rng.int(out.length);
  }
  return out;
}

/** A handshake message cut into fragments: overlapping, out of order, duplicated, some with bad offsets. */
function fragmentsOf(rng: Rng, f: Frag): Frag[] {
  const body = f.body;
  const pieces: Frag[] = [];
  const count = rng.range(2, 6);
  for (let i = 0; i < count; i++) {
    const offset = rng.int(Math.max(1, body.length));
    const length = rng.range(0, Math.max(0, body.length - offset));
    pieces.push({ ...f, length: body.length, offset, fragLength: length, body: body.subarray(offset, offset + length) });
  }
  if (rng.chance(0.5)) pieces.push({ ...f, length: body.length, offset: 0, fragLength: Math.min(body.length, 8), body: body.subarray(0, 8) });
  if (rng.chance(0.2)) pieces.push(mutateFrag(rng, rng.pick(pieces)));
  return pieces;
}

/** A handshake fragment made up: any type, sequence, huge or tiny lengths and offsets. */
function randomFrag(rng: Rng, seq?: number): Frag {
  const body = rng.chance(0.3) ? rng.bytes(rng.range(0, 64)) : rng.chance(0.5) ? Buffer.alloc(rng.pick([12, 32, 34, 100]), rng.int(256)) : rng.bytes(12);
  const length = rng.chance(0.5) ? body.length : rng.pick([body.length + 1, 0x3fff, 0x4000, 0xfff0, 0xffffff]);
  return { msgType: rng.pick([1, 2, 3, 11, 12, 14, 15, 16, 20, rng.int(256)]), length, seq: seq ?? rng.pick([0, 1, 2, 3, 4, 5, 9, 0xffff]), offset: rng.chance(0.6) ? 0 : rng.int(length + 1), fragLength: body.length, body };
}

/** A record's header changed (type, version, epoch, sequence, length) or made a tls12_cid record with a random CID. */
function mutateRecordHeader(rng: Rng, r: Rec): Rec {
  const out = { ...r };
  switch (rng.int(6)) {
    case 0:
      out.type = rng.pick([0, 19, 20, 21, 22, 23, 24, 25, 26, 128, 255]);
      break;
    case 1:
      out.version = rng.pick([0xfefd, 0xfeff, 0xfefc, 0xfe00, 0xfeff, 0x0303, 0x0000, 0xffff]);
      break;
    case 2:
      out.epoch = rng.pick([0, 1, 2, 3, 0x7fff, 0xfffe, 0xffff, r.epoch + 1]);
      break;
    case 3:
      out.seq = rng.chance(0.7) ? rng.pick(SEQ_EDGES) : r.seq + BigInt(rng.range(-2, 64));
      break;
    case 4:
      out.lengthField = rng.pick([0, 1, r.body.length - 1, r.body.length + 1, r.body.length + 100, 0x4800, 0x4801, 0xffff]);
      break;
    default:
      out.type = 25;
      out.cid = rng.bytes(rng.pick([0, 1, 5, 6, 6, 6, 7, 16, 32]));
  }
  return out;
}

/** A datagram changed at the record layer or below, 1-3 times. `others` lend records to concatenate. */
function mutateDatagram(rng: Rng, input: Buffer, others: readonly Buffer[]): Buffer {
  let { records, rest } = splitRecords(input);
  if (records.length === 0) return mutateBytes(rng, input, 4);
  const lenders = others.length > 0 ? others : [input];
  records = records.map((r) => ({ ...r }));
  for (let n = rng.range(1, 3); n > 0; n--) {
    const at = rng.int(records.length);
    const target = records[at]!;
    switch (rng.int(11)) {
      case 0:
      case 1:
        records[at] = mutateRecordHeader(rng, target);
        break;
      case 2:
        records.splice(at, 0, { ...target });
        break;
      case 3:
        records.push(...splitRecords(rng.pick(lenders)).records);
        break;
      case 4:
        if (records.length > 1) records.splice(at, 1);
        else records.reverse();
        break;
      case 5:
        records.reverse();
        break;
      case 6:
        target.body = mutateBytes(rng, target.body, 3);
        break;
      case 7: {
        const frags = splitFrags(target.body);
        if (target.type === 22 && frags.length > 0) target.body = Buffer.concat(frags.map((f) => fragBytes(rng.chance(0.6) ? mutateFrag(rng, f) : f)));
        else target.body = fragBytes(randomFrag(rng));
        break;
      }
      case 8: {
        const frags = splitFrags(target.body);
        if (target.type === 22 && frags.length > 0) {
          const pieces = fragmentsOf(rng, rng.pick(frags));
          records.splice(at, 1, ...pieces.map((p, i) => ({ ...target, seq: target.seq + BigInt(i), body: fragBytes(p) })));
        } else records.push({ ...target, type: 22, body: fragBytes(randomFrag(rng)) });
        break;
      }
      case 9:
        rest = Buffer.concat([rest, rng.bytes(rng.range(1, 20))]);
        break;
      default:
        for (let i = rng.pick([2, 10, 60]); i > 0; i--) records.push({ ...target });
    }
  }
  const bytes = Buffer.concat([datagramOf(records), rest]);
  if (rng.chance(0.15)) return bytes.subarray(0, rng.int(bytes.length + 1));
  if (rng.chance(0.15)) return mutateBytes(rng, bytes, 3);
  return bytes;
}

// ---------------------------------------------------------------------------------------------------------
// Cases

interface Context {
  readonly service: FuzzService;
  readonly token: string;
  readonly coaps: number;
  readonly controlId: string;
  readonly material: Material;
  /** One socket (source port) per slot; slot 0 is the relay's upstream port, where the captured cookies are good. */
  readonly ports: Port[];
  /** Whether ports[0] is the capture relay's upstream port (the first service; not a fresh one after a crash). */
  readonly relay: boolean;
  /** The established round's connections, by slot. */
  readonly connections: (PskConnection | undefined)[];
  readonly probe: ServiceProbe;
  /** DTLS state and counters, noted by the control for the round's summary. */
  last: string;
}

interface DtlsCase {
  readonly round: string;
  readonly seed: number;
  description: string;
  readonly sent: Buffer[];
  readonly notes: string[];
}

const newCase = (round: string, rng: Rng): DtlsCase => ({ round, seed: rng.u32(), description: '', sent: [], notes: [] });

function show(input: DtlsCase): string {
  const sent = input.sent.map((d) => hex(d, 2048)).join(' | ');
  return `${input.description || input.round}${input.notes.length > 0 ? ` [${input.notes.join('; ')}]` : ''}; datagrams (hex): ${sent || '(not sent yet)'}`;
}

/** Sends one of the case's fuzz datagrams from `port`, noting it for the report. */
async function fuzz(input: DtlsCase, port: Port, target: number, datagram: Buffer): Promise<void> {
  input.sent.push(datagram);
  await port.send(datagram, target, 'fuzz');
}

/** Ends what the port had going (a handshake of the previous case) with a fatal alert in clear. */
async function abort(port: Port, target: number): Promise<void> {
  await port.send(recordBytes(rec(21, 0, 0x7fff_0000n, Buffer.from([2, 90]))), target, 'setup');
  port.drain();
}

/**
 * A cookie for `hello` from this port: the HelloVerifyRequest's, or undefined when the server did not answer
 * one. Not asked for a ClientHello the server's own parser refuses (it answers nothing to those; waiting would
 * only slow the round down).
 */
async function cookieFor(port: Port, target: number, hello: Hello, messageSeq: number): Promise<Buffer | undefined> {
  const probe = helloBytes({ ...hello, cookie: EMPTY });
  if (!parseClientHello(probe)) return undefined;
  for (const waitMs of [150, 300]) {
    await port.send(recordBytes(rec(22, 0, BigInt(waitMs), fragBytes(whole(1, messageSeq, probe)))), target, 'setup');
    const answer = await port.next((d) => cookieOf(d) !== undefined, waitMs);
    if (answer) return cookieOf(answer);
  }
  return undefined;
}

/** Share of the hello and flight cases that go quiet at the end and listen to the server retransmitting its flight (RFC 6347 4.2.4). */
const QUIET = 0.004;

async function silence(rng: Rng, input: DtlsCase, port: Port): Promise<void> {
  const ms = rng.pick([1200, 3300]);
  counts.slow++;
  const before = port.received;
  await sleep(ms);
  input.notes.push(`then silent for ${ms} ms: ${port.received - before} datagrams came back meanwhile`);
}

/**
 * The record sequence number of a ClientHello (with a good cookie, the server's own epoch-0 numbers follow on
 * from it, retransmissions included): often one at the edges of its range, more often in quiet cases.
 */
function helloRecordSeq(rng: Rng, quiet: boolean): bigint {
  return rng.chance(quiet ? 0.5 : 0.2) ? rng.pick(SEQ_EDGES) : BigInt(rng.range(1, 5));
}

async function recordsCase(context: Context, input: DtlsCase, slot: number): Promise<string | undefined> {
  const rng = new Rng(input.seed);
  const port = context.ports[slot]!;
  const since = Date.now();
  const { all } = context.material;
  input.description = `record-layer mutations of captured datagrams from port ${port.port}${slot === 0 && context.relay ? ' (the relay port: captured cookies are good here)' : ''}`;
  await abort(port, context.coaps);
  for (let i = 0; i < PER_CASE; i++) await fuzz(input, port, context.coaps, mutateDatagram(rng, rng.pick(all), all));
  return internalError(context, [port], since);
}

async function helloCase(context: Context, input: DtlsCase, slot: number): Promise<string | undefined> {
  const rng = new Rng(input.seed);
  const port = context.ports[slot]!;
  const since = Date.now();
  const { hellos, sessionIds, all } = context.material;
  const quiet = rng.chance(QUIET);
  const base = rng.pick(hellos);
  const hello = rng.chance(0.85) ? mutateHello(rng, base.hello, sessionIds) : { ...base.hello };
  const messageSeq = rng.chance(0.8) ? base.messageSeq : rng.pick([0, 1, 2, 5, 0xfffe, 0xffff]);
  await abort(port, context.coaps);
  const cookie = rng.chance(0.5) ? await cookieFor(port, context.coaps, hello, messageSeq) : undefined;
  if (cookie) hello.cookie = cookie;
  input.description = `ClientHellos of ${base.capture.name} (${base.withCookie ? 'with' : 'without'} cookie), mutated; ${cookie ? 'a cookie made for' : 'no cookie for'} port ${port.port}`;
  for (let i = 0; i < PER_CASE; i++) {
    let body = helloBytes(i === 0 ? hello : rng.chance(0.6) ? hello : mutateHello(rng, hello, sessionIds));
    let frag = whole(1, messageSeq, body);
    let seq = helloRecordSeq(rng, quiet);
    switch (rng.int(8)) {
      case 0:
        body = mutateBytes(rng, body, 4);
        frag = whole(1, messageSeq, body);
        break;
      case 1:
        frag = mutateFrag(rng, frag);
        break;
      case 2: {
        const pieces = fragmentsOf(rng, frag);
        await fuzz(input, port, context.coaps, datagramOf(pieces.map((p) => rec(22, 0, seq++, fragBytes(p)))));
        continue;
      }
      case 3:
        await fuzz(input, port, context.coaps, mutateDatagram(rng, recordBytes(rec(22, 0, seq, fragBytes(frag))), all));
        continue;
      case 4:
        hello.cookie = cookie && rng.chance(0.5) ? Buffer.from(cookie.map((b, j) => (j === 0 ? b ^ 1 : b))) : rng.bytes(rng.pick([0, 1, 31, 32, 33, 255]));
        frag = whole(1, messageSeq, helloBytes(hello));
        if (cookie) hello.cookie = cookie;
        break;
      default:
    }
    await fuzz(input, port, context.coaps, recordBytes({ ...rec(22, 0, seq, fragBytes(frag)), version: rng.chance(0.2) ? 0xfeff : 0xfefd }));
  }
  if (quiet) await silence(rng, input, port);
  return internalError(context, [port], since);
}

async function flightCase(context: Context, input: DtlsCase, slot: number): Promise<string | undefined> {
  const rng = new Rng(input.seed);
  const port = context.ports[slot]!;
  const since = Date.now();
  const { hellos, flights, sessionIds, all } = context.material;
  const quiet = rng.chance(QUIET);
  const base = rng.pick(hellos.filter((h) => h.withCookie));
  const hello: Hello = { ...base.hello, random: rng.bytes(32), extensions: base.hello.extensions?.map((e) => ({ ...e })) };
  const what: string[] = [];
  if (rng.chance(0.3)) {
    hello.extensions = [...(hello.extensions ?? []).filter((e) => e.type !== 54 && e.type !== 254), { type: rng.chance(0.8) ? 54 : 254, data: vector1(rng.bytes(rng.pick([0, 0, 4, 8]))) }];
    what.push('Connection ID');
  }
  if (rng.chance(0.15) && sessionIds.length > 0) {
    hello.sessionId = rng.pick(sessionIds);
    what.push('a cached session ID');
  }
  if (rng.chance(0.1)) {
    hello.extensions = hello.extensions?.filter((e) => e.type !== 23);
    what.push('no extended master secret');
  }
  await abort(port, context.coaps);
  const cookie = await cookieFor(port, context.coaps, { ...hello, cookie: EMPTY }, base.messageSeq);
  hello.cookie = cookie ?? hello.cookie;
  input.description = `a handshake of ${base.capture.name}'s kind from port ${port.port}${what.length ? ` (${what.join(', ')})` : ''}${cookie ? '' : ' (no cookie came back)'}, then its client flight mutated`;
  const flight = flights.get(base.capture) ?? [];
  await fuzz(input, port, context.coaps, recordBytes(rec(22, 0, helloRecordSeq(rng, quiet), fragBytes(whole(1, base.messageSeq, helloBytes(hello))))));
  // The server's flight (or an alert): the client's flight follows it, as it would.
  if (cookie) await port.next((d) => splitRecords(d).records.some((r) => r.type === 22 || r.type === 21), 50);
  for (let i = 1; i < PER_CASE; i++) {
    const original = flight[Math.min(i - 1, flight.length - 1)] ?? rng.pick(all);
    let datagram: Buffer;
    switch (rng.int(8)) {
      case 0:
        datagram = original;
        break;
      case 1:
      case 2:
        datagram = mutateDatagram(rng, original, flight.length > 0 ? flight : all);
        break;
      case 3:
        datagram = mutateBytes(rng, original, 4);
        break;
      case 4:
        datagram = datagramOf(Array.from({ length: rng.range(1, 4) }, (_, j) => rec(22, rng.chance(0.8) ? 0 : 1, BigInt(10 + i * 8 + j), fragBytes(randomFrag(rng, rng.chance(0.5) ? base.messageSeq + 1 + rng.int(3) : undefined)))));
        break;
      case 5:
        datagram = datagramOf([rec(20, rng.chance(0.8) ? 0 : 1, BigInt(40 + i), rng.pick([Buffer.from([1]), EMPTY, Buffer.from([2]), Buffer.from([1, 1]), rng.bytes(40)]))]);
        break;
      case 6:
        datagram = datagramOf([rec(21, rng.chance(0.8) ? 0 : 1, BigInt(50 + i), rng.pick([Buffer.from([1, rng.int(256)]), Buffer.from([2, rng.int(256)]), Buffer.from([1]), Buffer.from([3, 0]), rng.bytes(3)]))]);
        break;
      default:
        datagram = Buffer.concat([rng.pick(flight.length > 0 ? flight : all), rng.pick(all)]);
    }
    await fuzz(input, port, context.coaps, datagram);
  }
  if (quiet) await silence(rng, input, port);
  return internalError(context, [port], since);
}

/** The records of a datagram as the server frames them (src/dtls/records.ts parseRecords), or undefined where it drops the whole datagram. */
function serverRecords(datagram: Buffer): Rec[] | undefined {
  const { records, rest } = splitRecords(datagram, 6);
  if (records.length === 0 || rest.length > 0) return undefined;
  return records.every((r) => r.type >= 20 && r.type <= 25 && r.version >> 8 === 0xfe && r.body.length <= 2 ** 14 + 2048) ? records : undefined;
}

/**
 * How the server routes a datagram from the port of an established connection (`fromConnectionPort`) or from
 * elsewhere: to that connection (true) or not. It leads with its CID, or comes from the connection's port
 * and does not lead with an epoch-0 ClientHello (since 03dc32a other epoch-0 handshake records of an
 * established peer go to its connection too, as a repeated final flight).
 */
function routedToConnection(records: Rec[], fromConnectionPort: boolean, cid: Buffer | undefined): boolean {
  const first = records[0];
  if (!first) return false;
  if (first.type === 25) return cid !== undefined && first.cid !== undefined && first.cid.equals(cid);
  if (!fromConnectionPort) return false;
  return !(first.epoch === 0 && first.type === 22 && serverFrags(first.body)?.[0]?.msgType === 1);
}

/** The handshake fragments of a record as the server takes them (parseHandshakeFragments): all or none. */
function serverFrags(body: Buffer): Frag[] | undefined {
  const frags = splitFrags(body);
  const framed = frags.reduce((n, f) => n + 12 + f.fragLength, 0);
  return body.length > 0 && framed === body.length && frags.every((f) => f.offset + f.fragLength <= f.length) ? frags : undefined;
}

/** What in an unauthenticated datagram ends the established connection it reaches, as reported (see KNOWN below), if anything. */
function plainEnding(datagram: Buffer, fromConnectionPort: boolean, cid: Buffer | undefined): string | undefined {
  const records = serverRecords(datagram);
  if (!records || !routedToConnection(records, fromConnectionPort, cid)) return undefined;
  if (records.some((r) => r.type === 21 && r.epoch === 0 && r.body.length === 2 && (r.body[0] === 2 || r.body[1] === 0))) return EPOCH0_ALERT;
  // A whole handshake message at the connection's next message_seq (4; up to 11 are buffered and may complete).
  const handshake = records.filter((r) => r.type === 22 && r.epoch === 0).flatMap((r) => serverFrags(r.body) ?? []);
  if (handshake.some((f) => f.seq >= 4 && f.seq < 12 && f.length <= 16_384)) return EPOCH0_HANDSHAKE;
  return undefined;
}

/** Fixed in session 10: an epoch-0 alert used to end an established connection. */
const EPOCH0_ALERT = 'unauthenticated epoch-0 alert ends an established connection';
/** Fixed in session 10: epoch-0 handshake messages of an established peer used to reach its handshake and drop it. */
const EPOCH0_HANDSHAKE = 'unauthenticated epoch-0 handshake message ends an established connection';

async function establishedCase(context: Context, input: DtlsCase, slot: number): Promise<string | undefined> {
  const rng = new Rng(input.seed);
  // Drawn whatever the slot had, so that a case replays (FUZZ_CASE) with the same choices on a fresh connection.
  const renew = rng.chance(0.03);
  const cidMode = rng.pick(['none', 'server', 'both'] as const);
  let connection = context.connections[slot];
  if (!connection || renew) {
    await connection?.close();
    const made = await pskHandshake(context.coaps, ESTABLISHED_ID, cidMode);
    if (typeof made === 'string') return `the PSK client could not shake hands from a new port (${made}): the service no longer takes handshakes from 127.0.0.1`;
    connection = made;
    context.connections[slot] = connection;
  }
  const c = connection;
  const other = context.ports[slot]!;
  const target = context.coaps;
  const since = Date.now();
  const serverCid = c.serverCid?.length ? c.serverCid : undefined;
  /** An authenticated record that may end the connection was sent (fatal alert, close_notify, a whole handshake message). */
  let mayEnd = false;
  const plainEndings = new Set<string>();
  input.description = `an established PSK connection from port ${c.port.port} (CID to the server: ${serverCid?.toString('hex') ?? 'none'}, ours: ${c.ownCid.length ? c.ownCid.toString('hex') : 'none'}), sent`;
  const coap = () => {
    const mid = rng.int(0x10000);
    const post = Buffer.concat([Buffer.from([0x42, 0x02, mid >> 8, mid & 0xff, 0xab, 0xcd, 0xb1, 0x64, 0x0f]), Buffer.from(ESTABLISHED_ID), Buffer.from([0x01, 0x78, 0xff]), rng.bytes(rng.range(1, 24))]);
    return rng.chance(0.3) ? post : mutateBytes(rng, post, 4);
  };
  const kinds: string[] = [];
  for (let i = 0; i < PER_CASE; i++) {
    let from = c.port;
    let datagram: Buffer;
    if (i === PER_CASE - 1 && rng.chance(0.15)) {
      // Last, sometimes, something that ends a connection: mostly authenticated, sometimes an alert in clear.
      switch (rng.int(7)) {
        case 0:
        case 1: {
          const body = rng.chance(0.5) ? Buffer.from([2, rng.pick([10, 20, 40, 47, 80, 90])]) : Buffer.from([1, 0]);
          datagram = c.seal(21, body);
          mayEnd = true;
          kinds.push(`alert ${body.toString('hex')}`);
          break;
        }
        case 2:
        case 3: {
          // The next message_seq of the client is 4 (it sent 0-3): a whole message, a renegotiating ClientHello among them.
          const frag = rng.chance(0.5) ? randomFrag(rng, 4) : whole(1, 4, clientHello({ random: rng.bytes(32), cipherSuites: [PSK_CCM8] }));
          datagram = c.seal(22, fragBytes({ ...frag, length: frag.body.length, offset: 0, fragLength: frag.body.length }));
          mayEnd = true;
          kinds.push(`handshake message ${frag.msgType}`);
          break;
        }
        case 4:
        case 5:
          if (serverCid && rng.chance(0.3)) {
            datagram = c.seal(25, Buffer.from([1, 0, 21, 0, 0]));
            mayEnd = true;
            kinds.push('close_notify as inner plaintext');
          } else {
            datagram = datagramOf([rec(21, 0, BigInt(rng.range(0, 1000)), rng.pick([Buffer.from([2, rng.pick([10, 40, 80, 115])]), Buffer.from([1, 0])]))]);
            kinds.push('plaintext (epoch 0) alert');
          }
          break;
        default:
          if (serverCid) {
            // From another port, led by the connection's real CID: found by CID (RFC 9146 6).
            from = other;
            datagram = datagramOf([{ type: 25, version: 0xfefd, epoch: 1, seq: c.nextSeq + 5n, cid: serverCid, body: rng.bytes(rng.range(0, 40)) }, rec(21, 0, 9n, Buffer.from([2, 40]))]);
            kinds.push('a record with its CID and a plaintext fatal alert, from another port');
          } else {
            datagram = Buffer.concat([rng.pick(c.sent), datagramOf([rec(21, 0, 9n, Buffer.from([2, 40]))])]);
            kinds.push('an authenticated record replayed with a plaintext fatal alert');
          }
      }
    } else {
      const kind = rng.int(12);
      switch (kind) {
        case 0:
        case 1: {
          const content = rng.pick([() => coap(), () => rng.bytes(rng.range(0, 64)), () => EMPTY, () => Buffer.alloc(16_000, 0x40), () => Buffer.from([0x40, 0x00, 0, 1])])();
          datagram = c.seal(23, content);
          kinds.push('data');
          break;
        }
        case 2: {
          // Alerts that end nothing: warnings other than close_notify, malformed ones.
          const body = rng.pick([Buffer.from([1, rng.range(1, 255)]), Buffer.from([1]), Buffer.from([3, 40]), Buffer.from([0, 0]), rng.bytes(4)]);
          datagram = c.seal(21, body);
          kinds.push(`alert ${body.toString('hex')}`);
          break;
        }
        case 3: {
          // Handshake fragments that complete no new message: old message_seq (the server repeats its last
          // flight), beyond the reassembly window, or longer than a handshake message may be.
          const frag = randomFrag(rng, rng.pick([0, 1, 2, 3, 12, 40, 0xffff]));
          const pieces = rng.chance(0.3) ? [{ ...frag, seq: rng.range(4, 11), length: rng.pick([0x4001, 0xffffff]) }] : rng.chance(0.5) ? [frag] : fragmentsOf(rng, frag);
          datagram = c.seal(22, Buffer.concat(pieces.map(fragBytes)));
          kinds.push('handshake fragments');
          break;
        }
        case 4:
          datagram = c.seal(rng.pick([20, 24, 0, 26, 255]), rng.bytes(rng.range(0, 8)));
          kinds.push('other content type');
          break;
        case 5:
          if (serverCid) {
            const inner = rng.pick([Buffer.alloc(rng.range(1, 40)), Buffer.concat([coap(), Buffer.from([25])]), Buffer.concat([coap(), Buffer.from([23]), Buffer.alloc(rng.range(1, 200))]), Buffer.concat([coap(), Buffer.from([rng.int(256)])])]);
            const real = [...inner].reverse().find((b) => b !== 0);
            if (real === 21 || real === 22) mayEnd = true;
            datagram = c.seal(25, inner);
            kinds.push('inner plaintext');
          } else {
            datagram = c.seal(23, coap(), { cid: rng.bytes(6) });
            kinds.push('data with an unknown CID');
          }
          break;
        case 6: {
          // Authenticated, then changed on the way: no longer authentic.
          const sealed = c.seal(23, coap());
          datagram = rng.chance(0.5) ? mutateBytes(rng, sealed, 2) : mutateDatagram(rng, sealed, []);
          kinds.push('tampered');
          break;
        }
        case 7:
          datagram = c.sent.length > 1 ? rng.pick(c.sent.slice(0, -1)) : c.seal(23, coap(), { seq: 0n });
          kinds.push('replayed');
          break;
        case 8:
          datagram = datagramOf([rng.pick([rec(20, 0, 5n, Buffer.from([1])), rec(23, 0, 6n, coap()), rec(22, 0, 7n, fragBytes(randomFrag(rng, rng.pick([2, 3, 4, 5])))), rec(21, 0, 8n, Buffer.from([1, 100]))])]);
          kinds.push('epoch-0 record');
          break;
        case 9:
        case 10:
          datagram = mutateDatagram(rng, rng.pick(context.material.all), context.material.all);
          kinds.push('captured, mutated');
          break;
        default:
          from = other;
          if (serverCid) {
            datagram = datagramOf([{ type: 25, version: 0xfefd, epoch: 1, seq: c.nextSeq + BigInt(rng.range(0, 100)), cid: serverCid, body: rng.bytes(rng.range(0, 60)) }]);
            kinds.push('a record with its CID from another port');
          } else {
            datagram = c.sent.length > 0 ? rng.pick(c.sent) : c.seal(23, coap());
            kinds.push('replayed from another port');
          }
      }
    }
    const ending = plainEnding(datagram, from === c.port, serverCid);
    if (ending) plainEndings.add(ending);
    await fuzz(input, from, target, datagram);
    if (PROBE_EACH && !mayEnd && !(await c.alive())) {
      input.notes.push(`no answer to a ping after datagram ${i + 1} (${kinds[kinds.length - 1]})`);
      break;
    }
  }
  input.description += `: ${kinds.join(', ')}`;
  const internal = await internalError(context, [c.port, other], since);
  if (mayEnd) {
    // It may have ended, as it should: not probed; a new connection for the next case.
    input.notes.push('ended with an authenticated record that may end it; not probed');
    context.connections[slot] = undefined;
    await c.close();
    return internal;
  }
  // A reported way of ending it was among the datagrams: probed one time in four (a dead connection costs the
  // probe's whole wait), otherwise given up like an ended one.
  const probe = plainEndings.size === 0 || rng.chance(0.25);
  if (!probe) {
    input.notes.push(`not probed (${[...plainEndings].join(', ')})`);
    context.connections[slot] = undefined;
    await c.close();
    return internal;
  }
  if (await c.alive()) return internal;
  context.connections[slot] = undefined;
  c.port.close();
  if (plainEndings.size > 0) return `${[...plainEndings].join(' + ')}: the established connection no longer answers after datagrams none of which authenticated`;
  return `the established connection no longer answers after datagrams none of which authenticated (no plaintext alert among them)${internal ? `; ${internal}` : ''}`;
}

/** A finding when the server sent one of `ports` a plaintext internal_error alert since `since`, with the exception it logged for that peer. */
async function internalError(context: Context, ports: readonly Port[], since: number): Promise<string | undefined> {
  await sleep(5);
  const hit = ports.find((p) => p.internalErrorAt >= since);
  if (!hit) return undefined;
  const peer = `"peer":"127.0.0.1:${hit.port}"`;
  const read = () =>
    context.service
      .outputTail(200)
      .split('\n')
      .filter((line) => line.includes(peer) && line.includes('DTLS handshake failed') && Number(/"time":(\d+)/.exec(line)?.[1] ?? 0) >= since - 20)
      .map((line) => /"err":\{"type":"(\w+)","message":"((?:[^"\\]|\\.)*)"/.exec(line))
      .filter((m) => m !== null)
      .map((m) => `${m[1]}: ${m[2]}`);
  // The log line comes through the service's stdout pipe, a little after the alert.
  let logged = read();
  for (let wait = 0; logged.length === 0 && wait < 10; wait++) {
    await sleep(50);
    logged = read();
  }
  return `the server sent a fatal internal_error alert (an exception other than a handshake failure); it logged for this peer: ${logged.length > 0 ? [...new Set(logged)].join(' | ') : '(nothing found in its last output)'}`;
}

/**
 * Nothing is known any more: the findings of the first runs (epoch-0 alerts or handshake messages ending an
 * established connection, internal_error on record or message numbers near their limits or a Finished before
 * the key exchange, a crash on a record number near 2^48, a handshake count leaking per address) are fixed,
 * so each one fails the round again if it comes back.
 */
function knownFinding(_input: DtlsCase, _finding: string): string | undefined {
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// The service's DTLS state, read through its inspector (no debug endpoint exposes it)

/**
 * After an uncaught exception, a node process started with --inspect waits until every inspector session has
 * disconnected ("Waiting for the debugger to disconnect...", node::inspector::Agent::WaitForDisconnect); the
 * harness keeps its own session open (FuzzService.memory), so a crash would look like a hang (no /health,
 * no exit). This ends such a process, already dead but for the wait, so that the round reports the crash
 * (with the exception in the service's output) and replays its suspects.
 */
function endOnFatalException(service: FuzzService, probe: ServiceProbe): void {
  const timer = setInterval(() => {
    if (!service.alive) return clearInterval(timer);
    if (!service.outputTail(30).includes('Waiting for the debugger to disconnect')) return;
    clearInterval(timer);
    probe.close();
    service.child.kill('SIGKILL');
  }, 100);
  timer.unref();
}

class ServiceProbe {
  #socket: WebSocket | undefined;
  #calls = 0;
  #transport: string | undefined;
  /** Uncaught exceptions the service reported (Runtime.exceptionThrown), with their stacks. */
  readonly fatal: string[] = [];

  static async connect(service: FuzzService): Promise<ServiceProbe> {
    const probe = new ServiceProbe();
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(service.outputTail(200))?.[1];
    if (!url) return probe;
    try {
      const socket = new WebSocket(url);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      socket.on('error', () => undefined);
      socket.on('message', (data: WebSocket.RawData) => {
        const message = JSON.parse((data as Buffer).toString()) as { method?: string; params?: { exceptionDetails?: { text?: string; exception?: { description?: string } } } };
        if (message.method !== 'Runtime.exceptionThrown') return;
        const details = message.params?.exceptionDetails;
        probe.fatal.push(details?.exception?.description ?? details?.text ?? 'an exception');
      });
      probe.#socket = socket;
      // Node prints an uncaught exception only once the inspector sessions are gone: this hears it first.
      await probe.#call('Runtime.enable', {});
      const proto = await probe.#call('Runtime.evaluate', { expression: 'Object.prototype', objectGroup: 'fuzz-dtls' });
      const all = await probe.#call('Runtime.queryObjects', { prototypeObjectId: proto.result.objectId, objectGroup: 'fuzz-dtls' });
      const found = await probe.#call('Runtime.callFunctionOn', {
        objectId: all.objects.objectId,
        objectGroup: 'fuzz-dtls-transport',
        functionDeclaration: 'function () { const found = this.find((o) => { try { return o.constructor?.name === "DtlsTransport" && o !== o.constructor.prototype; } catch { return false; } }); this.length = 0; return found; }',
      });
      await probe.#call('Runtime.releaseObjectGroup', { objectGroup: 'fuzz-dtls' });
      probe.#transport = found.result?.objectId;
    } catch {
      probe.close();
    }
    return probe;
  }

  /** DtlsTransport.stats, and its handshakes-in-progress count per address (a private map, read for diagnosis). */
  async state(): Promise<string> {
    if (!this.#transport) return 'DTLS state: not readable';
    try {
      const stats = await this.#call('Runtime.callFunctionOn', { objectId: this.#transport, functionDeclaration: 'function () { return JSON.stringify(this.stats); }', returnByValue: true });
      const props = await this.#call('Runtime.getProperties', { objectId: this.#transport, ownProperties: true });
      const perAddress = (props.privateProperties as { name: string; value?: { objectId?: string } }[] | undefined)?.find((p) => p.name === '#handshakesPerAddress')?.value?.objectId;
      let counted = '';
      if (perAddress) {
        const map = await this.#call('Runtime.callFunctionOn', { objectId: perAddress, functionDeclaration: 'function () { return JSON.stringify(Object.fromEntries(this)); }', returnByValue: true });
        counted = `, handshakes counted per address ${map.result.value}`;
      }
      return `DTLS state ${stats.result.value}${counted}`;
    } catch (error) {
      return `DTLS state: not readable (${(error as Error).message})`;
    }
  }

  close(): void {
    this.#socket?.terminate();
    this.#socket = undefined;
    this.#transport = undefined;
  }

  #call(method: string, params: object): Promise<any> {
    const socket = this.#socket;
    if (!socket) return Promise.reject(new Error('no inspector'));
    const id = ++this.#calls;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.off('message', onMessage);
        reject(new Error(`${method}: no answer within 10 s`));
      }, 10_000);
      const onMessage = (data: WebSocket.RawData) => {
        const message = JSON.parse((data as Buffer).toString()) as { id?: number; result?: unknown; error?: { message: string } };
        if (message.id !== id) return;
        clearTimeout(timer);
        socket.off('message', onMessage);
        if (message.error) reject(new Error(message.error.message));
        else resolve(message.result);
      };
      socket.on('message', onMessage);
      socket.send(JSON.stringify({ id, method, params }));
    });
  }
}

// ---------------------------------------------------------------------------------------------------------
// The rounds

describe('fuzz: DTLS 1.2 on the CoAPS port (the service in its own process)', { skip }, () => {
  let material: Material | undefined;
  let certificateDir: string | undefined;
  const probes: ServiceProbe[] = [];
  let roundStart = { ...counts, drops: 0 as number | undefined };

  const fuzzer = new Fuzzer<Context>({
    async setup(service) {
      const coaps = service.ports.coaps;
      assert.ok(coaps, `the service has no CoAPS port: ${JSON.stringify(service.ports)}`);
      const account = await fuzzAccount(service, 'fuzz-dtls');
      const serviceId = await fuzzService(service, account.token, { name: 'fuzz-dtls', type: 'coap' });
      const secured = async (key: string) => {
        const id = await fuzzEndpoint(service, account.token, { key, serviceId });
        const set = await service.request('PUT', `/endpoints/${id}/security`, { token: account.token, body: { mode: 'psk', identity: key, key: KEY_BYTES.toString('hex') } });
        assert.equal(set.status, 200, set.text);
        return id;
      };
      const captureId = await secured(CAPTURE_ID);
      const controlId = await secured(CONTROL_ID);
      await secured(ESTABLISHED_ID);
      const ports = [];
      for (let slot = 0; slot < CONCURRENCY; slot++) ports.push(await Port.open());
      const relay = !material;
      if (!material) {
        // Captured once (the datagrams do not depend on the service instance; a fresh one gets the same endpoints).
        certificateDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-fuzz-dtls-'));
        const pem = path.join(certificateDir, 'server.pem');
        await writeFile(pem, await (await fetch(`${service.baseUrl}/coaps/certificate`)).text());
        const url = (relay: number, key: string) => `coaps://127.0.0.1:${relay}/d/${key}/x`;
        const captures = [await capture('coap-client-openssl (PSK)', 'psk', 'coap-client-openssl', (relay) => ['-m', 'post', '-u', CAPTURE_ID, '-k', KEY, '-e', 'captured', url(relay, CAPTURE_ID)], ports[0]!, coaps)];
        await eventSeen(service, account.token, captureId, 'coap-request', (data) => data.text === 'captured');
        if (GNUTLS) captures.push(await capture('coap-client-gnutls (PSK)', 'psk', 'coap-client-gnutls', (relay) => ['-m', 'post', '-u', CAPTURE_ID, '-k', KEY, '-e', 'captured-gnutls', url(relay, CAPTURE_ID)], ports[0]!, coaps));
        captures.push(await capture('coap-client-openssl (certificate)', 'certificate', 'coap-client-openssl', (relay) => ['-m', 'get', '-C', pem, url(relay, 'nobody')], ports[0]!, coaps));
        material = takeApart(captures);
        const openssl = material.hellos.filter((h) => h.capture === captures[0]);
        assert.ok(openssl.some((h) => !h.withCookie) && openssl.some((h) => h.withCookie), `the OpenSSL capture has no ClientHello without and with cookie:\n${captures[0]!.output}`);
        assert.ok((material.flights.get(captures[0]!) ?? []).some((d) => splitRecords(d).records.some((r) => r.epoch === 1)), 'the OpenSSL capture has no epoch-1 record of the client');
      }
      const probe = await ServiceProbe.connect(service);
      probes.push(probe);
      endOnFatalException(service, probe);
      return { service, token: account.token, coaps, controlId, material, ports, relay, connections: [], probe, last: '' };
    },
  });

  /** The service the rounds use; a round that crashed it or left it broken leaves a fresh one for the next. */
  let broken = false;
  let started = false;
  const round = (spec: RoundSpec<Context, DtlsCase>) => async (t: { diagnostic: (message: string) => void }) => {
    if (!started || broken) {
      await fuzzer.stop();
      await fuzzer.start();
      started = true;
      broken = false;
      const m = fuzzer.context.material;
      t.diagnostic(
        `captured ${m.all.length} datagrams: ${m.captures.map((c) => `${c.name}: ${c.datagrams.filter((d) => d.from === 'client').length} from the client, ${c.datagrams.filter((d) => d.from === 'server').length} from the server`).join('; ')}; ` +
          `${m.hellos.length} ClientHellos, ${m.sessionIds.length} session IDs; ${TOTAL_DATAGRAMS} mutated datagrams in all at most ${RATE}/s`,
      );
    }
    roundStart = { ...counts, drops: udpReceiveBufferErrors() };
    const fatalBefore = probes.reduce((n, p) => n + p.fatal.length, 0);
    try {
      await fuzzer.round(spec, (line) => t.diagnostic(line));
    } catch (error) {
      broken = true;
      const fatal = probes.flatMap((p) => p.fatal);
      if (error instanceof Error && fatal.length > fatalBefore) error.message += `\nuncaught exception(s) the service reported through its inspector (the first killed it; a replay on a fresh process may add more):\n${fatal.slice(fatalBefore).join('\n')}`;
      throw error;
    }
  };

  /** coap-client-openssl still shakes hands with its PSK, and its POST arrives. */
  const control = async (context: Context, service: FuzzService) => {
    const nonce = `control ${Date.now()} ${Math.random()}`;
    const output = await runClient('coap-client-openssl', ['-m', 'post', '-u', CONTROL_ID, '-k', KEY, '-e', nonce, `coaps://127.0.0.1:${context.coaps}/d/${CONTROL_ID}/x`]);
    const state = await context.probe.state();
    context.last = state;
    try {
      await eventSeen(service, context.token, context.controlId, 'coap-request', (data) => data.text === nonce, 5000);
    } catch {
      throw new Error(`coap-client-openssl's PSK handshake and POST did not arrive as a coap-request event (its output: ${output.trim() || '(none)'}); ${state}`);
    }
  };

  const summary = (context: Context) => () => {
    const drops = udpReceiveBufferErrors();
    const dropped = drops === undefined || roundStart.drops === undefined ? '?' : String(drops - roundStart.drops);
    return (
      `${counts.fuzz - roundStart.fuzz} mutated datagrams, ${counts.setup - roundStart.setup} setup datagrams (aborts, cookie exchanges, handshakes, pings), ${counts.answers - roundStart.answers} datagrams back, ` +
      `${counts.slow - roundStart.slow} silent cases, ${counts.internalErrors - roundStart.internalErrors} internal_error alerts; kernel receive-buffer drops (whole machine) ${dropped}; after the round: ${context.last}`
    );
  };

  after(async () => {
    for (const probe of probes) probe.close();
    for (const port of [...openPorts]) port.close();
    await fuzzer.stop();
    if (certificateDir) await rm(certificateDir, { recursive: true, force: true });
  });

  const spec = (name: string, count: number, send: (context: Context, input: DtlsCase, slot: number) => Promise<string | undefined | void>, extra: Partial<RoundSpec<Context, DtlsCase>> = {}): RoundSpec<Context, DtlsCase> => {
    let context: Context | undefined;
    return {
      name,
      count,
      concurrency: CONCURRENCY,
      generate: (rng) => newCase(name, rng),
      show,
      send: (ctx, input, slot) => {
        context = ctx;
        input.sent.length = 0;
        input.notes.length = 0;
        return send(ctx, input, slot);
      },
      control,
      summary: () => (context ? summary(context)() : ''),
      known: knownFinding,
      timeoutMs: 15_000,
      settleMs: 500,
      ...extra,
    };
  };

  it('record layer: captured datagrams with changed headers, CIDs, duplicated, concatenated, cut and flipped records', round(spec('dtls-records', casesOf('records'), recordsCase)));

  it('ClientHellos: random extensions, cookie and session-id lengths, suites, fragment and record headers; with and without a good cookie', round(spec('dtls-hello', casesOf('hello'), helloCase)));

  it('handshakes in progress: a good cookie, then the captured client flights mutated (PSK, ECDHE, CID, resumption attempts)', round(spec('dtls-flight', casesOf('flight'), flightCase)));

  it(
    'established connections: authenticated garbage and unauthenticated records; the connection still answers a ping afterwards',
    round(
      spec('dtls-established', casesOf('established'), establishedCase),
    ),
  );
});
