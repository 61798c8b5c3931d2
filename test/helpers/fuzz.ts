/**
 * The fuzz suite's harness (test/fuzz/*.test.ts): the real service in a process of its own, a seeded PRNG,
 * byte and JSON mutators, and a round runner that sends mutated inputs with bounded concurrency and then
 * checks that the process is alive, answers /health, still serves a valid device, and keeps its memory
 * bounded. A failure names the seed and the offending input (hex or JSON text) so it can be replayed.
 *
 *   FUZZ_SEED=<n | 0xhex>       the seed (default below); printed with every failure
 *   FUZZ_ITERATIONS=<n | Nx>    inputs per round: a count for every round, or a multiple of the defaults (10x)
 *   FUZZ_CASE=<round>:<i>[,<j>] run only these cases of that round (the others run none), e.g. to replay one
 *   FUZZ_RSS_GROWTH_MB=<n>      how far the service's RSS, measured after a forced full GC, may grow over its start value (default 300)
 *   FUZZ_RSS_PEAK_MB=<n>        how far its RSS may ever grow while a round runs, garbage included (default 1000)
 *   FUZZ_VERBOSE=1              print every case's input before it is sent
 *   FUZZ_STRICT=1               fail on known findings too (those a round's `known` recognises: reported, not yet fixed)
 *   FUZZ_NODE_OPTIONS=…         NODE_OPTIONS of the service process (e.g. --max-old-space-size=256, --cpu-prof); also reach its script workers
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { within } from './devices.js';
import { CLI } from './repo.js';

export const FUZZ_ADMIN_TOKEN = 'AT:fuzz-admin-token-0123456789abcdef';

const DEFAULT_SEED = 0x10b71d6e;

function parseSeed(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_SEED;
  const value = raw.trim().toLowerCase().startsWith('0x') ? Number.parseInt(raw.trim().slice(2), 16) : Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`FUZZ_SEED must be a non-negative integer (decimal or 0x hex), not ${raw}`);
  return value >>> 0;
}

/** The seed of this run. */
export const FUZZ_SEED: number = parseSeed(process.env.FUZZ_SEED);
const SEED_TEXT = `FUZZ_SEED=0x${FUZZ_SEED.toString(16)}`;

/** Inputs per round: `FUZZ_ITERATIONS` as a count (every round) or a multiple (`10x`) of `defaultCount`. */
export function iterations(defaultCount: number): number {
  const raw = process.env.FUZZ_ITERATIONS?.trim();
  if (!raw) return defaultCount;
  const scale = /^(\d+(?:\.\d+)?)x$/i.exec(raw);
  if (scale) return Math.max(1, Math.round(defaultCount * Number(scale[1])));
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 0) throw new Error(`FUZZ_ITERATIONS must be a count or a multiple such as 10x, not ${raw}`);
  return count;
}

/** The cases FUZZ_CASE selects for `round`: undefined when it selects none in particular (run them all). */
function selectedCases(round: string): number[] | undefined {
  const raw = process.env.FUZZ_CASE?.trim();
  if (!raw) return undefined;
  const at = raw.lastIndexOf(':');
  if (at < 0) throw new Error(`FUZZ_CASE must be <round>:<index>[,<index>…], not ${raw}`);
  if (raw.slice(0, at) !== round) return [];
  return raw
    .slice(at + 1)
    .split(',')
    .map((part) => Number(part))
    .filter((index) => Number.isInteger(index) && index >= 0);
}

// ---------------------------------------------------------------------------------------------------------
// Seeded PRNG

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

function splitmix32(state: number): [number, number] {
  const next = (state + 0x9e3779b9) >>> 0;
  let z = next;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return [next, (z ^ (z >>> 16)) >>> 0];
}

/** sfc32, seeded from any number of 32-bit values through splitmix32: small, fast and reproducible. */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(...seeds: number[]) {
    let state = 0x2545f491;
    for (const seed of seeds) [state] = splitmix32((state ^ (seed >>> 0)) >>> 0);
    const words: number[] = [];
    for (let i = 0; i < 4; i++) {
      let word: number;
      [state, word] = splitmix32(state);
      words.push(word);
    }
    [this.#a, this.#b, this.#c, this.#d] = words as [number, number, number, number];
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return n <= 1 ? 0 : Math.floor((this.u32() / 0x100000000) * n);
  }

  /** An integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return this.u32() / 0x100000000 < p;
  }

  pick<T>(items: readonly T[]): T {
    assert.ok(items.length > 0, 'pick from an empty list');
    return items[this.int(items.length)]!;
  }

  bytes(n: number): Buffer {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }

  /** A short string of printable ASCII (or of `alphabet`). */
  text(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789-_'): string {
    let out = '';
    for (let i = 0; i < n; i++) out += alphabet[this.int(alphabet.length)];
    return out;
  }
}

/** The PRNG of one case: the same seed, round and index give the same input. */
export function caseRng(round: string, index: number): Rng {
  return new Rng(FUZZ_SEED, fnv1a(round), index);
}

// ---------------------------------------------------------------------------------------------------------
// Byte mutation

export const INTERESTING_8 = [0x00, 0x01, 0x02, 0x0a, 0x0d, 0x1f, 0x20, 0x23, 0x2b, 0x2f, 0x3a, 0x7e, 0x7f, 0x80, 0x81, 0xc0, 0xfe, 0xff] as const;
export const INTERESTING_16 = [0x0000, 0x0001, 0x007f, 0x0080, 0x00ff, 0x0100, 0x03ff, 0x0400, 0x7fff, 0x8000, 0xfffe, 0xffff] as const;
export const INTERESTING_32 = [0, 1, 0x7f, 0xff, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff] as const;

/** Bytes that are not UTF-8: a lone continuation, an overlong NUL, a surrogate, beyond U+10FFFF, a cut sequence. */
export const INVALID_UTF8: readonly Buffer[] = [
  Buffer.from([0x80]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xe2, 0x82]),
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
];

/** `input` with one to `max` random byte-level mutations: bit flips, byte changes, insertions, deletions, truncation, duplicated ranges, interesting integers. */
export function mutateBytes(rng: Rng, input: Buffer, max = 4): Buffer {
  let bytes = Buffer.from(input);
  const rounds = rng.range(1, max);
  for (let r = 0; r < rounds; r++) {
    const at = rng.int(bytes.length + 1);
    switch (rng.int(12)) {
      case 0:
        if (bytes.length > 0) bytes[rng.int(bytes.length)]! ^= 1 << rng.int(8);
        break;
      case 1:
        if (bytes.length > 0) bytes[rng.int(bytes.length)] = rng.pick(INTERESTING_8);
        break;
      case 2:
        if (bytes.length > 0) bytes[rng.int(bytes.length)] = rng.int(256);
        break;
      case 3:
        bytes = Buffer.concat([bytes.subarray(0, at), rng.chance(0.1) ? Buffer.alloc(rng.range(100, 3000), rng.int(256)) : rng.bytes(rng.range(1, 8)), bytes.subarray(at)]);
        break;
      case 4: {
        const length = rng.range(1, Math.max(1, Math.min(16, bytes.length - at)));
        bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + length)]);
        break;
      }
      case 5:
        bytes = bytes.subarray(0, rng.int(bytes.length + 1));
        break;
      case 6: {
        if (bytes.length === 0) break;
        const from = rng.int(bytes.length);
        const piece = bytes.subarray(from, from + rng.range(1, 32));
        bytes = Buffer.concat([bytes.subarray(0, at), piece, bytes.subarray(at)]);
        break;
      }
      case 7:
        if (bytes.length >= 2) bytes.writeUInt16BE(rng.pick(INTERESTING_16), rng.int(bytes.length - 1));
        break;
      case 8:
        if (bytes.length >= 4) bytes.writeUInt32BE(rng.pick(INTERESTING_32), rng.int(bytes.length - 3));
        break;
      case 9:
        if (bytes.length > 0) {
          const i = rng.int(bytes.length);
          bytes[i] = (bytes[i]! + rng.pick([-4, -2, -1, 1, 2, 4]) + 256) & 0xff;
        }
        break;
      case 10:
        bytes = Buffer.concat([bytes.subarray(0, at), rng.pick(INVALID_UTF8), bytes.subarray(at)]);
        break;
      default:
        bytes = Buffer.concat([bytes, rng.bytes(rng.range(1, 16))]);
    }
  }
  return bytes;
}

/** Lower-case hex of `bytes`, cut after `max` bytes (the case's FUZZ_CASE regenerates the whole of it). */
export function hex(bytes: Buffer, max = 8192): string {
  return bytes.length <= max ? bytes.toString('hex') : `${bytes.subarray(0, max).toString('hex')}… (${bytes.length} bytes, first ${max} shown)`;
}

/** Cuts `bytes` into one to `max` pieces at random places (written one by one, they exercise a parser's buffering). */
export function chunks(rng: Rng, bytes: Buffer, max = 4): Buffer[] {
  if (bytes.length < 2 || rng.chance(0.6)) return [bytes];
  const cuts = new Set<number>();
  const count = rng.range(1, max - 1);
  for (let i = 0; i < count; i++) cuts.add(rng.range(1, bytes.length - 1));
  const sorted = [...cuts].sort((x, y) => x - y);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of sorted) {
    pieces.push(bytes.subarray(from, cut));
    from = cut;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

// ---------------------------------------------------------------------------------------------------------
// JSON mutation (HTTP API and LoRa webhook bodies)

/** A JSON fragment written as it is: numbers JSON.parse rounds or overflows, duplicate keys, deep nesting. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of `value`, with {@link RawJson} fragments in place and own `__proto__` keys written like any other. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number') return Number.isFinite(value) ? (Object.is(value, -0) ? '-0' : String(value)) : 'null';
  if (typeof value === 'string' || typeof value === 'boolean') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => jsonText(item)).join(',')}]`;
  if (typeof value === 'object') {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${jsonText((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return 'null';
}

/** Sets `obj[key]` as an own enumerable property, `__proto__` included (assignment would set the prototype). */
function defineKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

const NASTY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '', ' ', '$where', 'a.b', '\u0000', '🔑', 'x'.repeat(300)];

function deepNesting(depth: number, open: string, close: string, inner = '1'): RawJson {
  return new RawJson(open.repeat(depth) + inner + close.repeat(depth));
}

/** A value of any JSON type that is likely to upset a handler. */
export function nastyValue(rng: Rng): unknown {
  switch (rng.int(30)) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1, 0.5, -0.000001, 255, 256, 65535, 65536, 2147483647, 2147483648, 4294967296, -2147483649]);
    case 3:
      return rng.pick([Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, -Number.MAX_SAFE_INTEGER - 2, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324]);
    case 4:
      return new RawJson(rng.pick(['1e400', '-1e400', '1e-400', '123456789012345678901234567890', '-0', '0.0000000000000000000000001', '1E+2', '1.0', '9007199254740993']));
    case 5:
      return '';
    case 6:
      return 'x'.repeat(rng.pick([255, 256, 257, 1024, 65536, 300_000]));
    case 7:
      return rng.pick(['\u0000', '\u0000abc', 'a\nb', '\r\n', '\t', '\u001f', '\u007f', '\u2028', '\ufeff', '\ud800', '\udfff', '\ud83d', '💥', 'Ω≈ç√', '\u202e']);
    case 8:
      return rng.pick(['../../etc/passwd', '%00', '%2e%2e%2f', '${7*7}', '{{7*7}}', "'; drop table endpoints; --", '" or 1=1 --', '<script>alert(1)</script>', 'k.', 'k.k.x', '*', '%', '_', '\\', '/', '#', '+', '$SYS']);
    case 9:
      return [];
    case 10:
      return {};
    case 11:
      return deepNesting(rng.pick([50, 99, 100, 101, 1000, 10_000]), '[', ']');
    case 12:
      return deepNesting(rng.pick([50, 99, 100, 101, 1000, 10_000]), '{"a":', '}');
    case 13: {
      const polluted: Record<string, unknown> = {};
      defineKey(polluted, '__proto__', { polluted: true, isAdmin: true, superAdmin: true, status: 500 });
      return polluted;
    }
    case 14:
      return { constructor: { prototype: { polluted: true, superAdmin: true } } };
    case 15:
      return new RawJson('{"a":1,"a":2,"a":{"b":3}}');
    case 16:
      return Array.from({ length: rng.pick([101, 1000, 10_000]) }, (_, i) => (rng.chance(0.5) ? i : `v${i}`));
    case 17: {
      const wide: Record<string, unknown> = {};
      for (let i = 0; i < rng.pick([101, 1000, 5000]); i++) wide[`k${i}`] = i;
      return wide;
    }
    case 18:
      return rng.text(rng.range(1, 40), 'abcXYZ019 -_.:/#+*%$@!?"\'\\{}[]<>');
    case 19:
      return new RawJson(rng.pick(['"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"', '"\\uDEAD"', '"a\\/b"']));
    case 20:
      return rng.pick(['true', 'null', '1', '[]', '{}', 'NaN', 'Infinity', '-1', '1e400', '2026-13-45T25:61:61Z', '0x10']);
    case 21:
      return rng.pick(['2026-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '0000-00-00', 'yesterday']);
    case 22:
      return { toString: 1, valueOf: 'x', hasOwnProperty: null, toJSON: 'y' };
    case 23:
      return rng.pick(['0101010101010101', 'ffffffffffffffff', 'FFFFFFFFFFFFFFFF', '00', 'zz', 'AT:' + 'a'.repeat(40), 'UT:x']);
    case 24:
      return [null, [null], { '': null }];
    case 25:
      return rng.pick([-1e21, 1e21, 1e-7, 123.456e7, 0.1 + 0.2]);
    case 26:
      return Buffer.from(rng.bytes(rng.range(1, 24))).toString('base64');
    case 27:
      return rng.pick(['mqtt', 'udp', 'tcp', 'coap', 'lwm2m', 'lora', 'LORA', 'Mqtt', 'nope']);
    case 28:
      return rng.pick(['up', 'join', 'ack', 'txack', 'status', 'log', 'location', 'integration']);
    default:
      return rng.int(1000) - 500;
  }
}

/** Paths to every node of `value` (objects and arrays included), as key lists. */
function nodePaths(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = [], limit = 400): (string | number)[][] {
  if (out.length >= limit) return out;
  out.push(prefix);
  if (value instanceof RawJson || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) value.forEach((item, i) => nodePaths(item, [...prefix, i], out, limit));
  else for (const key of Object.keys(value)) nodePaths((value as Record<string, unknown>)[key], [...prefix, key], out, limit);
  return out;
}

function clone(value: unknown): unknown {
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => clone(item));
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) defineKey(copy, key, clone((value as Record<string, unknown>)[key]));
  return copy;
}

function getAt(root: unknown, at: readonly (string | number)[]): unknown {
  let node = root;
  for (const key of at) node = (node as Record<string | number, unknown>)[key];
  return node;
}

/** `value` (not changed) with one to `max` structural mutations: values replaced by nasty ones or by other types, keys removed or added (prototype-pollution keys among them), arrays grown, nodes wrapped or duplicated. */
export function mutateJson(rng: Rng, value: unknown, max = 3): unknown {
  let root = clone(value);
  const rounds = rng.range(1, max);
  for (let r = 0; r < rounds; r++) {
    const paths = nodePaths(root);
    const at = rng.pick(paths);
    const parentPath = at.slice(0, -1);
    const last = at[at.length - 1];
    const node = getAt(root, at);
    const set = (replacement: unknown) => {
      if (at.length === 0) root = replacement;
      else {
        const parent = getAt(root, parentPath) as Record<string | number, unknown>;
        if (Array.isArray(parent)) parent[last as number] = replacement;
        else defineKey(parent, last as string, replacement);
      }
    };
    switch (rng.int(9)) {
      case 0:
      case 1:
      case 2:
        set(nastyValue(rng));
        break;
      case 3:
        if (at.length > 0) {
          const parent = getAt(root, parentPath) as Record<string | number, unknown>;
          if (Array.isArray(parent)) parent.splice(last as number, 1);
          else delete parent[last as string];
        }
        break;
      case 4:
        if (node !== null && typeof node === 'object' && !Array.isArray(node) && !(node instanceof RawJson)) {
          defineKey(node as Record<string, unknown>, rng.chance(0.6) ? rng.pick(NASTY_KEYS) : rng.text(rng.range(1, 12)), nastyValue(rng));
        } else if (Array.isArray(node)) {
          node.push(rng.chance(0.5) && node.length > 0 ? clone(rng.pick(node)) : nastyValue(rng));
        } else set(nastyValue(rng));
        break;
      case 5:
        set(rng.chance(0.5) ? [node] : { value: node });
        break;
      case 6:
        // Another type carrying the same information: "12" for 12, 1 for true, [x] for x.
        set(typeof node === 'number' ? String(node) : typeof node === 'string' ? (Number.isNaN(Number(node)) ? node.length : Number(node)) : typeof node === 'boolean' ? (node ? 1 : 0) : jsonText(node));
        break;
      case 7:
        if (Array.isArray(node) && node.length > 0) for (let i = rng.range(1, 200); i > 0; i--) node.push(clone(node[0]));
        else set(nastyValue(rng));
        break;
      default:
        if (typeof node === 'string') set(node + rng.pick(['\u0000', '\ud800', 'é', '/../', '%', '\\', '"', ' ', '\n']) + (rng.chance(0.2) ? node.repeat(rng.range(2, 50)) : ''));
        else if (typeof node === 'number') set(rng.pick([node + 1, node - 1, -node, node * 1e6, node / 3, Math.floor(node) + 0.5]));
        else set(nastyValue(rng));
    }
  }
  return root;
}

/** The body of a request: JSON text of `value`, sometimes byte-mutated into text that is not JSON or not UTF-8. */
export function mutatedJsonBody(rng: Rng, value: unknown): Buffer {
  const text = Buffer.from(jsonText(rng.chance(0.85) ? mutateJson(rng, value) : value));
  if (rng.chance(0.25)) return mutateBytes(rng, text, 3);
  if (rng.chance(0.05)) return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]);
  return text;
}

// ---------------------------------------------------------------------------------------------------------
// The service in its own process

/** Service processes still running; killed when this test process exits, however it exits. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export interface HttpAnswer {
  readonly status: number;
  readonly text: string;
  readonly json: any;
  readonly headers: Headers;
}

export interface HttpRequest {
  /** Bearer token; null for none. Default: the admin token. */
  readonly token?: string | null;
  /** An object is sent as JSON; a string or Buffer as it is. */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly timeoutMs?: number;
}

/** `iotbridge serve` (compiled, or under tsx: helpers/repo.ts) with every port 0 on loopback and its own data directory. */
export class FuzzService {
  readonly child: ChildProcess;
  readonly ports: Readonly<Record<string, number>>;
  readonly dataDir: string;
  readonly #output: string[];
  #inspector: Promise<WebSocket> | undefined;
  #inspectorCalls = 1;

  private constructor(child: ChildProcess, ports: Record<string, number>, dataDir: string, output: string[]) {
    this.child = child;
    this.ports = ports;
    this.dataDir = dataDir;
    this.#output = output;
  }

  static async start(env: Record<string, string> = {}): Promise<FuzzService> {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-fuzz-'));
    // A developer's IOTBRIDGE_* settings (a PostgreSQL URL, fixed ports) must not leak into the process under test.
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('IOTBRIDGE_')));
    // --expose-gc and the inspector (loopback, a free port) let the fuzzer measure memory after a full GC. Script workers are spawned with arguments of their own: they get neither.
    const child = spawn(process.execPath, ['--expose-gc', '--inspect=127.0.0.1:0', ...CLI, 'serve'], {
      env: {
        ...inherited,
        IOTBRIDGE_DATA_DIR: dataDir,
        IOTBRIDGE_HTTP_HOST: '127.0.0.1',
        IOTBRIDGE_HTTP_PORT: '0',
        IOTBRIDGE_UDP_PORT: '0',
        IOTBRIDGE_TCP_PORT: '0',
        IOTBRIDGE_COAP_PORT: '0',
        IOTBRIDGE_COAPS_PORT: '0',
        IOTBRIDGE_COAP_HOST: '127.0.0.1',
        IOTBRIDGE_MQTT_PORT: '0',
        IOTBRIDGE_MQTT_HOST: '127.0.0.1',
        IOTBRIDGE_ADMIN_TOKEN: FUZZ_ADMIN_TOKEN,
        IOTBRIDGE_LOG_LEVEL: 'info',
        IOTBRIDGE_SCRIPT_WORKERS: '1',
        ...(process.env.FUZZ_NODE_OPTIONS ? { NODE_OPTIONS: process.env.FUZZ_NODE_OPTIONS } : {}),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    child.once('exit', () => running.delete(child));
    // The last lines of output, for the report of a crash (the stack trace of an uncaught exception is on stderr).
    const output: string[] = [];
    const keep = (stream: string) => {
      let partial = '';
      return (chunk: Buffer) => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          output.push(`${stream}: ${line.length > 2000 ? `${line.slice(0, 2000)}…` : line}`);
          if (output.length > 200) output.shift();
        }
      };
    };
    child.stderr.on('data', keep('stderr'));
    const stdout = keep('stdout');
    let pending = '';
    const ready = new Promise<Record<string, number>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the service did not start within 60 s:\n${output.join('\n')}`)), 60_000);
      const onData = (chunk: Buffer) => {
        stdout(chunk);
        pending += chunk.toString();
        for (const line of pending.split('\n')) {
          if (!line.includes('"ports"')) continue;
          try {
            const parsed = JSON.parse(line) as { ports: Record<string, number> };
            clearTimeout(timer);
            child.stdout.off('data', onData);
            child.stdout.on('data', stdout);
            resolve(parsed.ports);
            return;
          } catch {
            // Not the ready line after all.
          }
        }
        pending = pending.slice(pending.lastIndexOf('\n') + 1);
      };
      child.stdout.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the service exited at start (code ${code}, signal ${signal}):\n${output.join('\n')}`));
      });
    });
    try {
      return new FuzzService(child, await ready, dataDir, output);
    } catch (error) {
      child.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      throw error;
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** How the process ended, or undefined while it runs. */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    // Both are set before the child's 'exit' event.
    return this.child.exitCode !== null || this.child.signalCode !== null ? { code: this.child.exitCode, signal: this.child.signalCode } : undefined;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.ports.http}`;
  }

  /** The last lines the process wrote. */
  outputTail(lines = 60): string {
    return this.#output.slice(-lines).join('\n');
  }

  async request(method: string, urlPath: string, options: HttpRequest = {}): Promise<HttpAnswer> {
    const token = options.token === undefined ? FUZZ_ADMIN_TOKEN : options.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body: string | Buffer | undefined;
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(this.baseUrl + urlPath, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? 15_000) });
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, text, json, headers: response.headers };
  }

  /**
   * The process's memory after a full garbage collection (run through its inspector): what it holds, not the
   * garbage V8 has not collected yet. `rssMb` is VmRSS of /proc/<pid>/status (Linux; undefined elsewhere).
   */
  async memory(): Promise<{ rssMb: number | undefined; heapUsedMb: number | undefined; collected: boolean }> {
    let heapUsedMb: number | undefined;
    let collected = false;
    try {
      const usage = JSON.parse(String(await this.#evaluate('gc(); gc(); JSON.stringify(process.memoryUsage())'))) as { heapUsed: number };
      heapUsedMb = usage.heapUsed / 1048576;
      collected = true;
    } catch {
      // No inspector: the RSS as it is.
    }
    return { rssMb: await this.rssMb(), heapUsedMb, collected };
  }

  /** Evaluates `expression` in the service process through its inspector (started with --inspect=127.0.0.1:0). */
  async #evaluate(expression: string): Promise<unknown> {
    this.#inspector ??= new Promise<WebSocket>((resolve, reject) => {
      const url = /Debugger listening on (ws:\/\/\S+)/.exec(this.#output.join('\n'))?.[1];
      if (!url) return reject(new Error('no inspector'));
      const socket = new WebSocket(url);
      socket.once('open', () => resolve(socket));
      socket.once('error', reject);
    });
    const socket = await this.#inspector;
    const id = this.#inspectorCalls++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error('the inspector did not answer within 30 s')), 30_000);
      const onMessage = (data: WebSocket.RawData) => {
        const message = JSON.parse((data as Buffer).toString()) as { id?: number; result?: { result?: { value?: unknown }; exceptionDetails?: { text: string } } };
        if (message.id !== id) return;
        if (message.result?.exceptionDetails) done(new Error(message.result.exceptionDetails.text));
        else done(undefined, message.result?.result?.value);
      };
      const done = (error: Error | undefined, value?: unknown) => {
        clearTimeout(timer);
        socket.off('message', onMessage);
        if (error) reject(error);
        else resolve(value);
      };
      socket.on('message', onMessage);
      socket.send(JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }));
    });
  }

  /** The service process's resident set size in MB (Linux: VmRSS of /proc/<pid>/status), undefined elsewhere. */
  async rssMb(): Promise<number | undefined> {
    try {
      const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
      const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
      return kb === undefined ? undefined : Number(kb) / 1024;
    } catch {
      return undefined;
    }
  }

  /** SIGTERM, then SIGKILL after 5 s; removes the data directory. */
  async stop(): Promise<void> {
    const inspector = this.#inspector;
    this.#inspector = undefined;
    (await inspector?.catch(() => undefined))?.terminate();
    if (this.alive) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------
// Rounds

/** What a protocol's fuzzer needs: state made on a fresh service (accounts, services, devices) and a check that a valid device still works. */
export interface FuzzTarget<C> {
  /** Environment of the service process beyond the defaults. */
  readonly env?: Record<string, string>;
  setup(service: FuzzService): Promise<C>;
}

export interface RoundSpec<C, I> {
  /** Unique within the suite; FUZZ_CASE names it. */
  readonly name: string;
  /** Default number of inputs (FUZZ_ITERATIONS overrides it). */
  readonly count: number;
  /** Inputs in flight at once; each worker has its slot (0 … concurrency-1), e.g. its own device. */
  readonly concurrency: number;
  generate(rng: Rng, index: number, slot: number): I;
  /** The input as a report shows it (hex of the bytes, JSON text). */
  show(input: I): string;
  /** Sends one input and waits for what it waits for. Returns a finding (e.g. a 500) or nothing. Expected refusals (closed sockets) are not errors. */
  send(context: C, input: I, slot: number): Promise<string | undefined | void>;
  /** After every input, a valid device still works: throws if not. */
  control(context: C, service: FuzzService): Promise<void>;
  /**
   * Recognises a finding already reported and not fixed yet: returns its name, and the round lists it as a
   * diagnostic instead of failing (unless FUZZ_STRICT=1). Crashes, hangs and memory growth are never known.
   */
  known?(input: I, finding: string): string | undefined;
  /** A line about what the round's answers were (e.g. a count of statuses), logged after it. */
  summary?(): string;
  /** A case that takes longer is a hang (default 15 s). */
  readonly timeoutMs?: number;
  /** How long after the last input the service may still be working on it (datagrams queued inside); default 300 ms. */
  readonly settleMs?: number;
}

export interface RoundReport {
  readonly cases: number;
  readonly ms: number;
  readonly rssStartMb: number | undefined;
  readonly rssEndMb: number | undefined;
  /** The highest RSS seen while the round ran (sampled every 250 ms, garbage included). */
  readonly rssPeakMb: number | undefined;
  readonly heapUsedMb: number | undefined;
}

interface Sent<I> {
  readonly index: number;
  readonly slot: number;
  readonly input: I;
  doneAt?: number;
}

const RSS_GROWTH_MB = Number(process.env.FUZZ_RSS_GROWTH_MB ?? 300);
const RSS_PEAK_MB = Number(process.env.FUZZ_RSS_PEAK_MB ?? 1000);
const VERBOSE = process.env.FUZZ_VERBOSE === '1';
const STRICT = process.env.FUZZ_STRICT === '1';

/** Runs rounds of one protocol against one service process (restarted for the next round if a round killed it). */
export class Fuzzer<C> {
  readonly #target: FuzzTarget<C>;
  #service: FuzzService | undefined;
  #context: C | undefined;
  #rssStartMb: number | undefined;
  #heapStartMb: number | undefined;

  constructor(target: FuzzTarget<C>) {
    this.#target = target;
  }

  get service(): FuzzService {
    assert.ok(this.#service, 'the fuzzer was not started');
    return this.#service;
  }

  get context(): C {
    assert.ok(this.#context !== undefined, 'the fuzzer was not started');
    return this.#context;
  }

  async start(): Promise<void> {
    this.#service = await FuzzService.start(this.#target.env);
    this.#context = await this.#target.setup(this.#service);
    const memory = await this.#service.memory();
    this.#rssStartMb = memory.rssMb;
    this.#heapStartMb = memory.heapUsedMb;
  }

  async stop(): Promise<void> {
    await this.#service?.stop();
  }

  /** One round as a `node:test` test function: its report lines go to the test's diagnostics. */
  test<I>(spec: RoundSpec<C, I>): (t: { diagnostic: (message: string) => void }) => Promise<void> {
    return (t) => this.round(spec, (line) => t.diagnostic(line)).then(() => undefined);
  }

  /** Runs one round; throws an error naming the seed and the offending inputs if the service crashed, hung, answered 5xx, stopped serving valid devices or grew past its memory bound. */
  async round<I>(spec: RoundSpec<C, I>, log: (line: string) => void = () => undefined): Promise<RoundReport> {
    if (!this.#service?.alive) {
      log(`${spec.name}: the service is not running (an earlier round ended it); starting a fresh one`);
      await this.#service?.stop();
      await this.start();
    }
    const service = this.service;
    const context = this.context;
    const started = Date.now();
    const chosen = selectedCases(spec.name);
    const indexes = chosen ?? Array.from({ length: iterations(spec.count) }, (_, i) => i);
    const concurrency = Math.max(1, Math.min(spec.concurrency, indexes.length));
    const timeoutMs = spec.timeoutMs ?? 15_000;
    const inFlight = new Map<number, Sent<I>>();
    const recent: Sent<I>[] = [];
    const findings: string[] = [];
    const known = new Map<string, { count: number; example: string }>();
    let next = 0;
    let done = 0;

    const worker = async (slot: number) => {
      while (service.alive && next < indexes.length) {
        const index = indexes[next++]!;
        const input = spec.generate(caseRng(spec.name, index), index, slot);
        const sent: Sent<I> = { index, slot, input };
        if (VERBOSE) log(`${spec.name} #${index} (slot ${slot}): ${spec.show(input)}`);
        inFlight.set(index, sent);
        let timer: NodeJS.Timeout | undefined;
        try {
          const outcome = await Promise.race([
            spec.send(context, input, slot),
            new Promise<'hang'>((resolve) => (timer = setTimeout(() => resolve('hang'), timeoutMs))),
          ]);
          if (outcome === 'hang') {
            if (service.alive) findings.push(`${describeCase(spec, sent)}\n    no answer within ${timeoutMs} ms (hang)`);
          } else if (typeof outcome === 'string') {
            const name = STRICT ? undefined : spec.known?.(input, outcome);
            const entry = `${describeCase(spec, sent)}\n    ${outcome}`;
            if (name === undefined) findings.push(entry);
            else known.set(name, { count: (known.get(name)?.count ?? 0) + 1, example: known.get(name)?.example ?? entry });
          }
        } catch (error) {
          // Once the process is gone every send fails; that is reported as the crash.
          if (service.alive) findings.push(`${describeCase(spec, sent)}\n    the fuzzer's send failed: ${(error as Error).stack ?? String(error)}`);
        } finally {
          clearTimeout(timer);
          inFlight.delete(index);
          sent.doneAt = Date.now();
          recent.push(sent);
          if (recent.length > 64) recent.shift();
          done++;
        }
      }
    };
    let rssPeakMb = this.#rssStartMb;
    const sampler = setInterval(() => {
      void service.rssMb().then((mb) => {
        if (mb !== undefined && (rssPeakMb === undefined || mb > rssPeakMb)) rssPeakMb = mb;
      });
    }, 250);
    try {
      await Promise.all(Array.from({ length: concurrency }, (_, slot) => worker(slot)));
    } finally {
      clearInterval(sampler);
    }
    if (service.alive) await sleep(spec.settleMs ?? 300);
    if (!service.alive) await this.#crashed(spec, service, [...inFlight.values()], recent);

    // Alive: it answers, it still serves a valid device, and its memory stayed bounded.
    const health = await service.request('GET', '/health', { token: null, timeoutMs: 10_000 }).catch((error: Error) => error);
    if (health instanceof Error || health.status !== 200) {
      if (!service.alive) await this.#crashed(spec, service, [...inFlight.values()], recent);
      assert.fail(`${header(spec)}: GET /health did not answer 200 after the round (${health instanceof Error ? health.message : `${health.status} ${health.text}`}); the last inputs:\n${recent.slice(-8).map((s) => describeCase(spec, s)).join('\n')}`);
    }
    try {
      await spec.control(context, service);
    } catch (error) {
      if (!service.alive) await this.#crashed(spec, service, [...inFlight.values()], recent);
      assert.fail(`${header(spec)}: a valid device no longer works after the round: ${(error as Error).message}\nthe last inputs:\n${recent.slice(-8).map((s) => describeCase(spec, s)).join('\n')}\nservice output:\n${service.outputTail(30)}`);
    }
    // Bounded memory: after a full GC it holds at most RSS_GROWTH_MB more than at start; garbage included, it never went past RSS_PEAK_MB more.
    const memory = await service.memory();
    const rssEndMb = memory.rssMb;
    const lastInputs = () => recent.slice(-8).map((s) => describeCase(spec, s)).join('\n');
    if (rssEndMb !== undefined && this.#rssStartMb !== undefined) {
      assert.ok(
        rssEndMb <= this.#rssStartMb + RSS_GROWTH_MB,
        `${header(spec)}: the service's RSS ${memory.collected ? 'after a full GC ' : ''}grew from ${this.#rssStartMb.toFixed(0)} MB to ${rssEndMb.toFixed(0)} MB (heap used ${memory.heapUsedMb?.toFixed(0) ?? '?'} MB, at start ${this.#heapStartMb?.toFixed(0) ?? '?'} MB; bound: +${RSS_GROWTH_MB} MB, FUZZ_RSS_GROWTH_MB); the last inputs:\n${lastInputs()}`,
      );
    }
    if (rssPeakMb !== undefined && this.#rssStartMb !== undefined) {
      assert.ok(rssPeakMb <= this.#rssStartMb + RSS_PEAK_MB, `${header(spec)}: the service's RSS reached ${rssPeakMb.toFixed(0)} MB during the round, from ${this.#rssStartMb.toFixed(0)} MB (bound: +${RSS_PEAK_MB} MB, FUZZ_RSS_PEAK_MB); the last inputs:\n${lastInputs()}`);
    }
    if (findings.length > 0) {
      assert.fail(`${header(spec)}: ${findings.length} finding(s) in ${done} cases:\n${findings.slice(0, 25).join('\n')}${findings.length > 25 ? `\n… and ${findings.length - 25} more` : ''}\nservice output:\n${service.outputTail(20)}`);
    }
    for (const [name, { count, example }] of known) {
      log(`${spec.name}: KNOWN FINDING ${name}: ${count} case(s), e.g.`);
      for (const line of example.split('\n')) log(line);
    }
    if (spec.summary) log(`${spec.name}: ${spec.summary()}`);
    const report = { cases: done, ms: Date.now() - started, rssStartMb: this.#rssStartMb, rssEndMb, rssPeakMb, heapUsedMb: memory.heapUsedMb };
    const mb = (value: number | undefined) => (value === undefined ? '?' : value.toFixed(0));
    log(
      `${spec.name}: ${report.cases} cases in ${(report.ms / 1000).toFixed(1)} s; service RSS at start ${mb(report.rssStartMb)} MB, peak ${mb(report.rssPeakMb)} MB, ` +
        `${memory.collected ? 'after a full GC' : 'now'} ${mb(report.rssEndMb)} MB (heap used ${mb(this.#heapStartMb)} → ${mb(report.heapUsedMb)} MB) (${SEED_TEXT})`,
    );
    return report;
  }

  /** The process died: names the inputs in flight and just sent, replays them one by one on a fresh process to find the one that kills it, and fails. */
  async #crashed<I>(spec: RoundSpec<C, I>, service: FuzzService, inFlight: Sent<I>[], recent: Sent<I>[]): Promise<never> {
    const now = Date.now();
    const suspects = [...inFlight.sort((x, y) => y.index - x.index), ...recent.filter((s) => now - (s.doneAt ?? now) < 3000 && !inFlight.includes(s)).reverse()].slice(0, 24);
    let confirmed: Sent<I> | undefined;
    let confirmation = '';
    try {
      confirmed = await this.#confirm(spec, suspects);
      confirmation = confirmed ? `confirmed on a fresh process: case #${confirmed.index} alone kills it` : 'no single suspect killed a fresh process on replay (the crash needs several inputs, or timing)';
    } catch (error) {
      confirmation = `replay on a fresh process failed: ${(error as Error).message}`;
    }
    const exit = service.exit;
    assert.fail(
      [
        `${header(spec)}: the service process exited (code ${exit?.code ?? '?'}, signal ${exit?.signal ?? 'none'}).`,
        confirmation,
        ...(confirmed ? ['offending input:', describeCase(spec, confirmed)] : []),
        `inputs in flight or sent within the last 3 s (newest first):`,
        ...suspects.filter((s) => s !== confirmed).map((s) => describeCase(spec, s)),
        'service output:',
        service.outputTail(60),
      ].join('\n'),
    );
  }

  async #confirm<I>(spec: RoundSpec<C, I>, suspects: Sent<I>[]): Promise<Sent<I> | undefined> {
    if (suspects.length === 0) return undefined;
    const fresh = await FuzzService.start(this.#target.env);
    try {
      const context = await this.#target.setup(fresh);
      for (const suspect of suspects) {
        await within(spec.send(context, suspect.input, suspect.slot).catch(() => undefined), spec.timeoutMs ?? 15_000, () => undefined);
        await sleep((spec.settleMs ?? 300) + 300);
        if (!fresh.alive) return suspect;
      }
      return undefined;
    } finally {
      await fresh.stop();
    }
  }
}

function header(spec: { name: string }): string {
  return `fuzz round ${spec.name} (${SEED_TEXT})`;
}

function describeCase<C, I>(spec: RoundSpec<C, I>, sent: Sent<I>): string {
  return `  case #${sent.index} (slot ${sent.slot}; replay: ${SEED_TEXT} FUZZ_CASE=${spec.name}:${sent.index}): ${spec.show(sent.input)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Small shared helpers

/** Polls `probe` until it returns something other than undefined (or `timeoutMs` passes). */
export async function poll<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** An account below the root with an API token of its own. */
export async function fuzzAccount(service: FuzzService, name: string): Promise<{ accountId: string; token: string }> {
  const created = await service.request('POST', '/accounts', { body: { name } });
  assert.equal(created.status, 201, created.text);
  const accountId = created.json.accountId as string;
  const issued = await service.request('POST', '/tokens', { token: `${FUZZ_ADMIN_TOKEN}:${accountId}`, body: { name: `${name} token` } });
  assert.equal(issued.status, 201, issued.text);
  return { accountId, token: issued.json.token as string };
}

export async function fuzzService(service: FuzzService, token: string, body: Record<string, unknown>): Promise<string> {
  const created = await service.request('POST', '/services', { token, body });
  assert.equal(created.status, 201, created.text);
  return created.json.id as string;
}

export async function fuzzEndpoint(service: FuzzService, token: string, body: Record<string, unknown>, password?: string): Promise<string> {
  const created = await service.request('POST', '/endpoints', { token, body });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  if (password !== undefined) {
    const set = await service.request('PUT', `/endpoints/${id}/credentials`, { token, body: { password } });
    assert.equal(set.status, 204, set.text);
  }
  return id;
}

/** Waits until the endpoint has an event of `type` whose data satisfies `match`. */
export async function eventSeen(service: FuzzService, token: string, endpointId: string, type: string, match: (data: any) => boolean, timeoutMs = 10_000): Promise<void> {
  await poll(
    async () => {
      const found = await service.request('GET', `/history?type=${encodeURIComponent(type)}&endpoint=${endpointId}&limit=50`, { token });
      assert.equal(found.status, 200, found.text);
      return (found.json.items as { data: unknown }[]).some((event) => match(event.data)) ? true : undefined;
    },
    `a ${type} event of ${endpointId}`,
    timeoutMs,
  );
}
