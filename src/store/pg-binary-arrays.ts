/**
 * One-dimensional PostgreSQL arrays in the binary wire format (`array_send` / `array_recv`), for the bulk inserts'
 * `unnest($1::text[], …)` parameters. node-postgres sends a Buffer parameter as binary, so the elements travel as
 * their bytes: no text literal to escape on our side (pg escapes each element with two regular expressions) and no
 * `array_in` parse on the server's (docs/performance.md, session 30).
 *
 * Layout: ndim, has-nulls flag, element type OID, then per dimension its length and lower bound (all int32), then
 * each element as an int32 length (-1 for NULL) and its bytes.
 */

const HEADER = 20;
const TEXT_OID = 25;
const INT2_OID = 21;
const INT4_OID = 23;
const INT8_OID = 20;
const FLOAT4_OID = 700;
const TWO_32 = 2 ** 32;

/**
 * `text[]`; null and undefined are NULL. Strings go as UTF-8 (an unpaired surrogate as U+FFFD, as Node writes it).
 * A column of ASCII only (ids, keys, types, most JSON) is framed as one Latin-1 string, length prefixes included,
 * and written in one call: a byte count and a write per element cost ~3× as much (docs/performance.md, session 34).
 */
export function textArray(values: readonly (string | null | undefined)[]): Buffer {
  let joined = '';
  for (const value of values) if (value != null) joined += value;
  return Buffer.byteLength(joined) === joined.length ? asciiTextArray(values) : utf8TextArray(values);
}

/** Each element's 4-byte length as 4 Latin-1 characters (those of the lengths seen most, made once). */
const LENGTH_PREFIXES: string[] = [];
const NULL_PREFIX = '\xff\xff\xff\xff';

function lengthPrefix(length: number): string {
  if (length < 4096) return (LENGTH_PREFIXES[length] ??= String.fromCharCode(0, 0, length >>> 8, length & 255));
  return String.fromCharCode(length >>> 24, (length >>> 16) & 255, (length >>> 8) & 255, length & 255);
}

/** Every element ASCII: its UTF-8 bytes are its Latin-1 ones, one byte a character. */
function asciiTextArray(values: readonly (string | null | undefined)[]): Buffer {
  let framed = '';
  let nulls = 0;
  for (const value of values) {
    if (value == null) {
      framed += NULL_PREFIX;
      nulls = 1;
    } else framed += lengthPrefix(value.length) + value;
  }
  const buffer = header(HEADER + framed.length, nulls, TEXT_OID, values.length);
  buffer.write(framed, HEADER, 'latin1');
  return buffer;
}

function utf8TextArray(values: readonly (string | null | undefined)[]): Buffer {
  const lengths = new Int32Array(values.length);
  let size = HEADER + 4 * values.length;
  let nulls = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value == null) {
      lengths[i] = -1;
      nulls = 1;
    } else {
      const length = Buffer.byteLength(value);
      lengths[i] = length;
      size += length;
    }
  }
  const buffer = header(size, nulls, TEXT_OID, values.length);
  let at = HEADER;
  for (let i = 0; i < values.length; i++) {
    const length = lengths[i]!;
    buffer.writeInt32BE(length, at);
    at += 4;
    if (length > 0) at += buffer.write(values[i]!, at, length, 'utf8');
  }
  return buffer;
}

/** `smallint[]`. */
export function int2Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixedWidth(values, INT2_OID, 2, (buffer, value, at) => buffer.writeInt16BE(value, at));
}

/** `integer[]`. */
export function int4Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixedWidth(values, INT4_OID, 4, (buffer, value, at) => buffer.writeInt32BE(value, at));
}

/** `bigint[]` from safe integers (times in ms): two int32 halves, no BigInt made per element. */
export function int8Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixedWidth(values, INT8_OID, 8, (buffer, value, at) => {
    if (!Number.isSafeInteger(value)) throw new RangeError(`not a safe integer for bigint[]: ${value}`);
    const high = Math.floor(value / TWO_32);
    buffer.writeInt32BE(high, at);
    buffer.writeUInt32BE(value - high * TWO_32, at + 4);
  });
}

/** `real[]`. */
export function float4Array(values: readonly (number | null | undefined)[]): Buffer {
  return fixedWidth(values, FLOAT4_OID, 4, (buffer, value, at) => buffer.writeFloatBE(value, at));
}

function fixedWidth(
  values: readonly (number | null | undefined)[],
  oid: number,
  width: number,
  write: (buffer: Buffer, value: number, at: number) => void,
): Buffer {
  let nulls = 0;
  let size = HEADER;
  for (const value of values) {
    if (value == null) nulls = 1;
    size += value == null ? 4 : 4 + width;
  }
  const buffer = header(size, nulls, oid, values.length);
  let at = HEADER;
  for (const value of values) {
    if (value == null) {
      buffer.writeInt32BE(-1, at);
      at += 4;
    } else {
      buffer.writeInt32BE(width, at);
      write(buffer, value, at + 4);
      at += 4 + width;
    }
  }
  return buffer;
}

function header(size: number, nulls: number, oid: number, length: number): Buffer {
  const buffer = Buffer.allocUnsafe(size);
  buffer.writeInt32BE(1, 0);
  buffer.writeInt32BE(nulls, 4);
  buffer.writeInt32BE(oid, 8);
  buffer.writeInt32BE(length, 12);
  buffer.writeInt32BE(1, 16);
  return buffer;
}
