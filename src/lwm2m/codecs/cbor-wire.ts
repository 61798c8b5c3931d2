/**
 * The subset of CBOR (RFC 8949) the LwM2M formats use, read and written here rather than with cbor-x because
 * the formats need what a general-purpose decoder hides or lacks (see docs/lwm2m-codecs.md):
 * indefinite-length byte and text strings (RFC 8949 3.2.3; Anjay sends opaque values in chunks), strict UTF-8,
 * duplicate map keys reported, arrays as map keys (LwM2M CBOR paths), exact 64-bit integers, the offset of
 * every error, and allocation bounded by the payload size. Floats are written in the shortest form that keeps
 * the value (RFC 8949 4.2.2 preferred serialization), integers in the shortest head.
 *
 * Data model: integers are `bigint` (major types 0/1), floats are `number` (major type 7), so the two never mix.
 */
import { CodecError, type FormatName } from './errors.js';

export type CborValue = bigint | number | string | Uint8Array | boolean | null | undefined | readonly CborValue[] | CborMap | CborTag;

/** Array.isArray, narrowing to the readonly arrays CborValue holds. */
export function isCborArray(value: CborValue): value is readonly CborValue[] {
  return Array.isArray(value);
}

/** A map in wire order; keys may be any item (LwM2M CBOR uses integers and arrays of integers). */
export class CborMap {
  constructor(readonly entries: ReadonlyArray<readonly [CborValue, CborValue]>) {}
}

export class CborTag {
  constructor(
    readonly tag: number,
    readonly value: CborValue,
  ) {}
}

/** Nesting beyond this is refused: LwM2M payloads need about six levels, and recursion must stay bounded. */
const MAX_DEPTH = 32;
const BREAK = Symbol('break');
const UTF8_DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const UTF8_ENCODER = new TextEncoder();

/** Decodes exactly one data item that spans the whole payload. */
export function decodeCbor(format: FormatName, bytes: Uint8Array): CborValue {
  const reader = new Reader(format, bytes);
  if (bytes.length === 0) throw new CodecError(format, 'empty payload, expected a CBOR data item');
  const value = reader.item(0);
  if (value === BREAK) throw new CodecError(format, 'unexpected "break" (0xff)', reader.pos - 1);
  if (reader.pos !== bytes.length) throw new CodecError(format, `${bytes.length - reader.pos} bytes left after the CBOR data item`, reader.pos);
  return value;
}

class Reader {
  pos = 0;
  readonly #view: DataView;

  constructor(
    readonly format: FormatName,
    readonly bytes: Uint8Array,
  ) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(message: string, at = this.pos): never {
    throw new CodecError(this.format, message, at);
  }

  #need(count: number, what: string): void {
    if (this.pos + count > this.bytes.length) this.fail(`truncated ${what}: ${count} bytes needed, ${this.bytes.length - this.pos} left`);
  }

  /** Reads the argument of a head; undefined for indefinite length (additional info 31). */
  #argument(info: number, start: number): bigint | undefined {
    if (info < 24) return BigInt(info);
    if (info === 31) return undefined;
    const size = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : 0;
    if (size === 0) this.fail(`reserved additional information ${info}`, start);
    this.#need(size, 'head');
    const at = this.pos;
    this.pos += size;
    if (size === 1) return BigInt(this.#view.getUint8(at));
    if (size === 2) return BigInt(this.#view.getUint16(at));
    if (size === 4) return BigInt(this.#view.getUint32(at));
    return this.#view.getBigUint64(at);
  }

  /** A count of bytes or items, which cannot exceed what is left of the payload. */
  #count(argument: bigint, perItem: number, what: string, start: number): number {
    const left = BigInt(this.bytes.length - this.pos);
    if (argument * BigInt(perItem) > left) this.fail(`${what} of ${argument} runs past the end of the payload`, start);
    return Number(argument);
  }

  item(depth: number): CborValue | typeof BREAK {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    this.#need(1, 'data item');
    const start = this.pos;
    const initial = this.#view.getUint8(this.pos++);
    const major = initial >> 5;
    const info = initial & 0x1f;
    if (major === 7) return this.#simple(info, start);
    const argument = this.#argument(info, start);
    switch (major) {
      case 0:
        return argument ?? this.fail('indefinite length is not allowed for an integer', start);
      case 1:
        return argument === undefined ? this.fail('indefinite length is not allowed for an integer', start) : -1n - argument;
      case 2:
      case 3:
        return this.#string(major, argument, start);
      case 4:
        return this.#array(argument, depth, start);
      case 5:
        return this.#map(argument, depth, start);
      default: {
        if (argument === undefined) this.fail('indefinite length is not allowed for a tag', start);
        const value = this.item(depth + 1);
        if (value === BREAK) this.fail('tag without content', start);
        return new CborTag(Number(argument), value);
      }
    }
  }

  #simple(info: number, start: number): CborValue | typeof BREAK {
    switch (info) {
      case 20:
        return false;
      case 21:
        return true;
      case 22:
        return null;
      case 23:
        return undefined;
      case 25:
        this.#need(2, 'half-precision float');
        this.pos += 2;
        return halfToNumber(this.#view.getUint16(start + 1));
      case 26:
        this.#need(4, 'single-precision float');
        this.pos += 4;
        return this.#view.getFloat32(start + 1);
      case 27:
        this.#need(8, 'double-precision float');
        this.pos += 8;
        return this.#view.getFloat64(start + 1);
      case 31:
        return BREAK;
      default:
        return this.fail(`unsupported simple value (additional information ${info})`, start);
    }
  }

  #string(major: 2 | 3, argument: bigint | undefined, start: number): string | Uint8Array {
    let bytes: Uint8Array;
    if (argument === undefined) {
      // RFC 8949 3.2.3: a sequence of definite-length chunks of the same major type, ended by "break".
      const chunks: Uint8Array[] = [];
      for (;;) {
        this.#need(1, 'indefinite-length string');
        const chunkStart = this.pos;
        const head = this.#view.getUint8(this.pos++);
        if (head === 0xff) break;
        if (head >> 5 !== major || (head & 0x1f) === 31) this.fail('a chunk of an indefinite-length string must be a definite string of the same type', chunkStart);
        const length = this.#count(this.#argument(head & 0x1f, chunkStart) ?? 0n, 1, 'string length', chunkStart);
        chunks.push(this.bytes.subarray(this.pos, this.pos + length));
        this.pos += length;
      }
      bytes = new Uint8Array(Buffer.concat(chunks));
    } else {
      const length = this.#count(argument, 1, 'string length', start);
      bytes = this.bytes.slice(this.pos, this.pos + length);
      this.pos += length;
    }
    if (major === 2) return bytes;
    try {
      return UTF8_DECODER.decode(bytes);
    } catch {
      return this.fail('text string is not valid UTF-8', start);
    }
  }

  #array(argument: bigint | undefined, depth: number, start: number): CborValue[] {
    const items: CborValue[] = [];
    const count = argument === undefined ? Infinity : this.#count(argument, 1, 'array length', start);
    while (items.length < count) {
      const value = this.item(depth + 1);
      if (value === BREAK) {
        if (count !== Infinity) this.fail('unexpected "break" inside a definite-length array', this.pos - 1);
        break;
      }
      items.push(value);
    }
    return items;
  }

  #map(argument: bigint | undefined, depth: number, start: number): CborMap {
    const entries: Array<readonly [CborValue, CborValue]> = [];
    const seen = new Set<string>();
    const count = argument === undefined ? Infinity : this.#count(argument, 2, 'map size', start);
    while (entries.length < count) {
      const keyStart = this.pos;
      const key = this.item(depth + 1);
      if (key === BREAK) {
        if (count !== Infinity) this.fail('unexpected "break" inside a definite-length map', this.pos - 1);
        break;
      }
      const value = this.item(depth + 1);
      if (value === BREAK) this.fail('map key without a value', this.pos - 1);
      const id = keyId(key);
      if (seen.has(id)) this.fail(`duplicate map key ${id}`, keyStart);
      seen.add(id);
      entries.push([key, value]);
    }
    return new CborMap(entries);
  }
}

/** A comparable identity for map keys (RFC 8949 5.6: keys must be unique). */
function keyId(key: CborValue): string {
  if (typeof key === 'bigint') return `${key}`;
  if (typeof key === 'string') return JSON.stringify(key);
  if (isCborArray(key)) return `[${key.map(keyId).join(',')}]`;
  if (key instanceof Uint8Array) return `h'${Buffer.from(key).toString('hex')}'`;
  if (key instanceof CborTag) return `${key.tag}(${keyId(key.value)})`;
  if (key instanceof CborMap) return `{${key.entries.map(([k, v]) => `${keyId(k)}:${keyId(v)}`).join(',')}}`;
  return typeof key === 'number' ? `float ${key}` : String(key);
}

function halfToNumber(half: number): number {
  const sign = half & 0x8000 ? -1 : 1;
  const exponent = (half >> 10) & 0x1f;
  const mantissa = half & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

// ---- writing -------------------------------------------------------------------------------------------------

/** Encodes with definite lengths and shortest heads; `number` is always written as a float, `bigint` as an integer. */
export function encodeCbor(format: FormatName, value: CborValue): Uint8Array {
  const writer = new Writer(format);
  writer.item(value);
  return writer.bytes();
}

class Writer {
  constructor(readonly format: FormatName) {}

  #buffer = new Uint8Array(256);
  #view = new DataView(this.#buffer.buffer);
  #length = 0;

  bytes(): Uint8Array {
    return this.#buffer.slice(0, this.#length);
  }

  #reserve(count: number): number {
    if (this.#length + count > this.#buffer.length) {
      const grown = new Uint8Array(Math.max(this.#buffer.length * 2, this.#length + count));
      grown.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = grown;
      this.#view = new DataView(grown.buffer);
    }
    const at = this.#length;
    this.#length += count;
    return at;
  }

  #head(major: number, argument: bigint): void {
    const type = major << 5;
    if (argument < 24n) this.#view.setUint8(this.#reserve(1), type | Number(argument));
    else if (argument <= 0xffn) this.#view.setUint16(this.#reserve(2), ((type | 24) << 8) | Number(argument));
    else if (argument <= 0xffffn) {
      const at = this.#reserve(3);
      this.#view.setUint8(at, type | 25);
      this.#view.setUint16(at + 1, Number(argument));
    } else if (argument <= 0xffffffffn) {
      const at = this.#reserve(5);
      this.#view.setUint8(at, type | 26);
      this.#view.setUint32(at + 1, Number(argument));
    } else {
      const at = this.#reserve(9);
      this.#view.setUint8(at, type | 27);
      this.#view.setBigUint64(at + 1, argument);
    }
  }

  #raw(bytes: Uint8Array): void {
    this.#buffer.set(bytes, this.#reserve(bytes.length));
  }

  item(value: CborValue): void {
    if (typeof value === 'bigint') {
      if (value < -(2n ** 64n) || value >= 2n ** 64n) throw new CodecError(this.format, `${value} does not fit a CBOR integer`);
      if (value >= 0n) this.#head(0, value);
      else this.#head(1, -1n - value);
    } else if (typeof value === 'number') this.#float(value);
    else if (typeof value === 'string') {
      const bytes = UTF8_ENCODER.encode(value);
      this.#head(3, BigInt(bytes.length));
      this.#raw(bytes);
    } else if (value instanceof Uint8Array) {
      this.#head(2, BigInt(value.length));
      this.#raw(value);
    } else if (typeof value === 'boolean') this.#view.setUint8(this.#reserve(1), value ? 0xf5 : 0xf4);
    else if (value === null) this.#view.setUint8(this.#reserve(1), 0xf6);
    else if (value === undefined) this.#view.setUint8(this.#reserve(1), 0xf7);
    else if (value instanceof CborMap) {
      this.#head(5, BigInt(value.entries.length));
      for (const [key, entry] of value.entries) {
        this.item(key);
        this.item(entry);
      }
    } else if (value instanceof CborTag) {
      this.#head(6, BigInt(value.tag));
      this.item(value.value);
    } else {
      this.#head(4, BigInt(value.length));
      for (const entry of value) this.item(entry);
    }
  }

  #float(value: number): void {
    const half = numberToHalf(value);
    if (half !== undefined) {
      const at = this.#reserve(3);
      this.#view.setUint8(at, 0xf9);
      this.#view.setUint16(at + 1, half);
    } else if (Object.is(Math.fround(value), value)) {
      const at = this.#reserve(5);
      this.#view.setUint8(at, 0xfa);
      this.#view.setFloat32(at + 1, value);
    } else {
      const at = this.#reserve(9);
      this.#view.setUint8(at, 0xfb);
      this.#view.setFloat64(at + 1, value);
    }
  }
}

/** The half-precision bits of a value that half precision holds exactly, else undefined. */
function numberToHalf(value: number): number | undefined {
  if (Number.isNaN(value)) return 0x7e00;
  if (value === Infinity) return 0x7c00;
  if (value === -Infinity) return 0xfc00;
  if (value === 0) return Object.is(value, -0) ? 0x8000 : 0;
  const sign = value < 0 ? 0x8000 : 0;
  const magnitude = Math.abs(value);
  const exponent = Math.floor(Math.log2(magnitude));
  if (exponent > 15 || exponent < -24) return undefined;
  if (exponent >= -14) {
    // Normal: 10 mantissa bits.
    const mantissa = (magnitude / 2 ** exponent - 1) * 1024;
    if (!Number.isInteger(mantissa) || mantissa >= 1024 || mantissa < 0) return undefined;
    return sign | ((exponent + 15) << 10) | mantissa;
  }
  // Subnormal: multiples of 2^-24.
  const mantissa = magnitude / 2 ** -24;
  return Number.isInteger(mantissa) && mantissa < 1024 ? sign | mantissa : undefined;
}
