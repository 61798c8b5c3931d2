/**
 * Resource values as the codecs share them (Core spec Appendix C "Data Types"): range checks, object links,
 * base64, times, UTF-8, and the checks every decoder applies to its output (paths under the request path,
 * no duplicates). Pure helpers; each codec decides how a type looks on its wire.
 */
import {
  formatPath,
  parsePath,
  type Lwm2mPath,
  type Lwm2mRecord,
  type ModelLookup,
  type ObjectLink,
  type ResourceType,
  type ResourceValue,
} from '../model.js';
import { CodecError, type FormatName } from './errors.js';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
export const UINT64_MAX = 2n ** 64n - 1n;
/** RFC 8428 4.5.3: SenML times below 2^28 are relative to "now"; LwM2M JSON uses the same rule for bt + t. */
export const RELATIVE_TIME_LIMIT = 2 ** 28;

/** What every codec entry point accepts. */
export interface CodecOptions {
  /** The request path the payload belongs to, e.g. `/3/0` for a Read of an instance; `/` (the default) for composite operations. */
  readonly basePath?: string | undefined;
  /** Resource definitions; without them (or for unknown resources) values are typed from what the payload says. */
  readonly models?: ModelLookup | undefined;
  /** "Now" in seconds since the epoch, for relative SenML / LwM2M JSON times; defaults to the clock. */
  readonly now?: number | undefined;
}

/** Integers travel as bigint inside the codecs; records get a number when it is exact (model.ts: bigint beyond 2^53). */
export function integerResult(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

export function parseBasePath(format: FormatName, options: CodecOptions | undefined): Lwm2mPath {
  return toPath(format, options?.basePath ?? '/');
}

export function toPath(format: FormatName, text: string): Lwm2mPath {
  try {
    return parsePath(text);
  } catch (error) {
    throw new CodecError(format, (error as Error).message);
  }
}

/** Depth of a path: 0 for `/`, 4 for a resource instance. */
export function depth(path: Lwm2mPath): number {
  if (path.objectId === undefined) return 0;
  if (path.instanceId === undefined) return 1;
  if (path.resourceId === undefined) return 2;
  return path.resourceInstanceId === undefined ? 3 : 4;
}

export function isUnder(path: Lwm2mPath, base: Lwm2mPath): boolean {
  return (
    (base.objectId === undefined || base.objectId === path.objectId) &&
    (base.instanceId === undefined || base.instanceId === path.instanceId) &&
    (base.resourceId === undefined || base.resourceId === path.resourceId) &&
    (base.resourceInstanceId === undefined || base.resourceInstanceId === path.resourceInstanceId)
  );
}

/** A decoded value's path: a resource or resource instance inside the request path. */
export function valuePath(format: FormatName, text: string, base: Lwm2mPath): Lwm2mPath {
  const path = toPath(format, text);
  if (depth(path) < 3) throw new CodecError(format, `${formatPath(path)} is not a resource or resource instance, so it cannot carry a value`);
  if (!isUnder(path, base)) throw new CodecError(format, `${formatPath(path)} is outside the request path ${formatPath(base)}`);
  return path;
}

/** The record paths an encoder is given: resources or resource instances inside the request path. */
export function recordPath(format: FormatName, record: Lwm2mRecord, base: Lwm2mPath): Lwm2mPath {
  return valuePath(format, record.path, base);
}

/** Records with canonical paths ("/3/0/9/" → "/3/0/9"), each checked to be a value inside the request path. */
export function canonicalRecords(format: FormatName, records: readonly Lwm2mRecord[], base: Lwm2mPath): Lwm2mRecord[] {
  return records.map((record) => {
    const path = formatPath(recordPath(format, record, base));
    return path === record.path ? record : { ...record, path };
  });
}

/** Single-value formats (text, opaque, CBOR) address one resource or resource instance. */
export function singleValuePath(format: FormatName, options: CodecOptions | undefined): Lwm2mPath {
  const path = parseBasePath(format, options);
  if (depth(path) < 3) throw new CodecError(format, `needs a resource or resource-instance path, not ${formatPath(path)}`);
  return path;
}

/** The one record a single-value format carries: the value at the request path. */
export function singleRecord(format: FormatName, records: readonly Lwm2mRecord[], options: CodecOptions | undefined): Lwm2mRecord {
  const base = singleValuePath(format, options);
  const [record, ...rest] = records;
  if (record === undefined || rest.length > 0) throw new CodecError(format, `carries exactly one value, not ${records.length}`);
  const path = formatPath(toPath(format, record.path));
  if (path !== formatPath(base)) throw new CodecError(format, `record ${record.path} is not the request path ${formatPath(base)}`);
  return path === record.path ? record : { ...record, path };
}

export function modelType(models: ModelLookup | undefined, path: Lwm2mPath): ResourceType | undefined {
  if (models === undefined || path.objectId === undefined || path.resourceId === undefined) return undefined;
  return models.resource(path.objectId, path.resourceId)?.type;
}

/** Decoders reject the same path twice (at the same time): a device cannot report two values for one resource. */
export function checkUnique(format: FormatName, records: readonly Lwm2mRecord[]): Lwm2mRecord[] {
  const seen = new Set<string>();
  for (const record of records) {
    const key = `${record.path}@${record.time ?? ''}`;
    if (seen.has(key)) throw new CodecError(format, `${record.path} appears twice${record.time === undefined ? '' : ` at time ${record.time}`}`);
    seen.add(key);
  }
  return [...records];
}

/** A decoded record; `path` may come formatted already (decoders format it once for their messages). */
export function makeRecord(path: Lwm2mPath | string, type: ResourceType, value: ResourceValue, time?: number): Lwm2mRecord {
  const text = typeof path === 'string' ? path : formatPath(path);
  return time === undefined ? { path: text, type, value } : { path: text, type, value, time };
}

// ---- integers ------------------------------------------------------------------------------------------------

/** Range of the wire integer for a type: integer and time are signed 64-bit, unsigned is 0..2^64-1 (Core Appendix C). */
export function checkIntegerRange(format: FormatName, value: bigint, type: 'integer' | 'unsigned' | 'time', where: string): bigint {
  const [min, max] = type === 'unsigned' ? [0n, UINT64_MAX] : [INT64_MIN, INT64_MAX];
  if (value < min || value > max) throw new CodecError(format, `${where}: ${value} is out of range for ${type}`);
  return value;
}

/** The integer of an integer/unsigned record value, range-checked. */
export function integerOf(format: FormatName, record: Lwm2mRecord, type: 'integer' | 'unsigned'): bigint {
  const { value } = record;
  if (typeof value === 'bigint') return checkIntegerRange(format, value, type, record.path);
  if (typeof value === 'number' && Number.isInteger(value)) return checkIntegerRange(format, BigInt(value), type, record.path);
  throw new CodecError(format, `${record.path}: ${describe(value)} is not an ${type === 'unsigned' ? 'unsigned integer' : 'integer'}`);
}

/** An exact integer from a wire number (JSON literals arrive as bigint when integral, CBOR integers always do). */
export function wholeNumber(format: FormatName, value: number | bigint, where: string): bigint {
  if (typeof value === 'bigint') return value;
  if (Number.isInteger(value)) return BigInt(value);
  throw new CodecError(format, `${where}: ${value} is not an integer`);
}

// ---- floats --------------------------------------------------------------------------------------------------

export function floatOf(format: FormatName, record: Lwm2mRecord, finiteOnly: boolean): number {
  const { value } = record;
  const number = typeof value === 'bigint' ? Number(value) : value;
  if (typeof number !== 'number') throw new CodecError(format, `${record.path}: ${describe(value)} is not a float`);
  if (finiteOnly && !Number.isFinite(number)) throw new CodecError(format, `${record.path}: ${number} cannot be represented (only finite numbers)`);
  return number;
}

// ---- time ----------------------------------------------------------------------------------------------------

/** Whole seconds of a time record (a Date, or a number of seconds); sub-second parts are dropped (Time is whole seconds). */
export function timeOf(format: FormatName, record: Lwm2mRecord): bigint {
  const { value } = record;
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) throw new CodecError(format, `${record.path}: invalid Date`);
    return BigInt(Math.floor(ms / 1000));
  }
  if (typeof value === 'number' && Number.isFinite(value)) return checkIntegerRange(format, BigInt(Math.floor(value)), 'time', record.path);
  if (typeof value === 'bigint') return checkIntegerRange(format, value, 'time', record.path);
  throw new CodecError(format, `${record.path}: ${describe(value)} is not a time (Date or seconds)`);
}

/** Seconds since the epoch → Date, refusing what a Date cannot hold (±8.64e12 s). */
export function dateOf(format: FormatName, seconds: number | bigint, where: string): Date {
  const ms = Number(seconds) * 1000;
  const date = new Date(ms);
  if (!Number.isFinite(ms) || Number.isNaN(date.getTime())) throw new CodecError(format, `${where}: time ${seconds} is out of range`);
  return date;
}

/**
 * A number from a JSON or SenML `v` field, as the model's type; unmodelled, an integer literal is `integer`
 * (`unsigned` above the int64 range) and any other number `float`. Undefined when the type takes no number.
 */
export function numericValue(format: FormatName, v: number | bigint, type: ResourceType | undefined, where: string): [ResourceType, ResourceValue] | undefined {
  switch (type) {
    case undefined:
      return typeof v === 'bigint' ? [v > INT64_MAX ? 'unsigned' : 'integer', integerResult(checkIntegerRange(format, v, v < 0n ? 'integer' : 'unsigned', where))] : ['float', v];
    case 'integer':
    case 'unsigned':
      return [type, integerResult(checkIntegerRange(format, wholeNumber(format, v, where), type, where))];
    case 'float':
      return [type, Number(v)];
    case 'time':
      return [type, dateOf(format, v, where)];
    default:
      return undefined;
  }
}

// ---- object links --------------------------------------------------------------------------------------------

/** "o:i" (Core Appendix C: two 16-bit unsigned integers separated by a colon). */
export function formatObjlnk(link: ObjectLink): string {
  return `${link.objectId}:${link.instanceId}`;
}

export function parseObjlnk(format: FormatName, text: string, where: string): ObjectLink {
  const match = /^(\d{1,5}):(\d{1,5})$/.exec(text);
  const objectId = Number(match?.[1]);
  const instanceId = Number(match?.[2]);
  if (!match || objectId > 0xffff || instanceId > 0xffff) throw new CodecError(format, `${where}: "${text}" is not an object link (o:i, each 0..65535)`);
  return { objectId, instanceId };
}

export function objlnkOf(format: FormatName, record: Lwm2mRecord): ObjectLink {
  const { value } = record;
  if (isObjectLink(value)) return value;
  throw new CodecError(format, `${record.path}: ${describe(value)} is not an object link {objectId, instanceId} (each 0..65535)`);
}

function isObjectLink(value: unknown): value is ObjectLink {
  if (typeof value !== 'object' || value === null || value instanceof Date || value instanceof Uint8Array) return false;
  const { objectId, instanceId } = value as Record<string, unknown>;
  const id = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xffff;
  return id(objectId) && id(instanceId);
}

// ---- strings, bytes, booleans --------------------------------------------------------------------------------

export function stringOf(format: FormatName, record: Lwm2mRecord): string {
  if (typeof record.value === 'string') return record.value;
  throw new CodecError(format, `${record.path}: ${describe(record.value)} is not a string`);
}

export function bytesOf(format: FormatName, record: Lwm2mRecord): Uint8Array {
  if (record.value instanceof Uint8Array) return record.value;
  throw new CodecError(format, `${record.path}: ${describe(record.value)} is not opaque bytes (Uint8Array)`);
}

export function booleanOf(format: FormatName, record: Lwm2mRecord): boolean {
  if (typeof record.value === 'boolean') return record.value;
  throw new CodecError(format, `${record.path}: ${describe(record.value)} is not a boolean`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/** Strict UTF-8 (LwM2M strings are UTF-8; a broken sequence is a malformed payload, not a replacement character). */
export function decodeUtf8(format: FormatName, bytes: Uint8Array, where: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new CodecError(format, `${where}: not valid UTF-8`);
  }
}

export function encodeUtf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** Base64 of RFC 4648 section 4 (padded; text format, LwM2M JSON) or section 5 (URL alphabet, unpadded; SenML vd). */
export function toBase64(bytes: Uint8Array, variant: 'base64' | 'base64url'): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(variant);
}

/** Strict base64: Buffer.from() would skip bad characters silently. Padding is optional in both alphabets. */
export function fromBase64(format: FormatName, text: string, variant: 'base64' | 'base64url', where: string): Uint8Array {
  const alphabet = variant === 'base64' ? /^[A-Za-z0-9+/]*={0,2}$/ : /^[A-Za-z0-9_-]*={0,2}$/;
  const body = text.replace(/=+$/, '');
  const padded = text.length > body.length;
  if (!alphabet.test(text) || body.length % 4 === 1 || (padded && text.length % 4 !== 0)) {
    throw new CodecError(format, `${where}: "${text.length > 40 ? `${text.slice(0, 40)}…` : text}" is not ${variant}`);
  }
  return new Uint8Array(Buffer.from(body, variant));
}

export function describe(value: unknown): string {
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (value instanceof Date) return `Date ${value.toISOString()}`;
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'bigint') return `${value}`;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}
