/**
 * SenML CBOR (application/senml+cbor, Content-Format 112; RFC 8428 section 6, LwM2M Core 1.1 7.4.6, 1.2.2 7.5.7): an array of
 * maps keyed by the integer labels of RFC 8428 Table 6 (bver -1, bn -2, bt -3, bu -4, bv -5, bs -6, n 0, u 1,
 * v 2, vs 3, vb 4, s 5, t 6, ut 7, vd 8) and LwM2M's text key "vlo". Numbers may arrive as integers, floats,
 * decimal fractions (tag 4, RFC 8428 6) or, for times, epoch date/time (tag 1) as some devices send.
 */
import type { Lwm2mRecord } from '../model.js';
import { CborMap, CborTag, decodeCbor, encodeCbor, isCborArray, type CborValue } from './cbor-wire.js';
import { CodecError } from './errors.js';
import { pathsToSenml, recordsToSenml, senmlToPaths, senmlToRecords, type SenmlRecord } from './senml.js';
import type { CodecOptions } from './values.js';

const FORMAT = 'senml-cbor';

/** Labels in the order they are written, with their CBOR keys. */
const LABELS = [
  ['bn', -2n], ['bt', -3n], ['bu', -4n], ['bv', -5n], ['bs', -6n], ['bver', -1n], ['n', 0n], ['u', 1n],
  ['t', 6n], ['ut', 7n], ['v', 2n], ['vs', 3n], ['vb', 4n], ['vd', 8n], ['vlo', 'vlo'], ['s', 5n],
] as const satisfies ReadonlyArray<readonly [keyof SenmlRecord, bigint | string]>;
const BY_KEY = new Map<bigint | string, keyof SenmlRecord>(LABELS.map(([label, key]) => [key, label]));
const TEXT = new Set<keyof SenmlRecord>(['bn', 'bu', 'n', 'u', 'vs', 'vlo']);
const EXACT = new Set<keyof SenmlRecord>(['v', 'bv', 's', 'bs']);

/**
 * Parses SenML CBOR into records as written (base fields unresolved). An empty payload is an empty pack.
 * @throws CodecError for malformed CBOR, a non-array, a field of the wrong type, or an unknown
 *   must-understand label (a text label ending in "_", RFC 8428 4.4)
 */
export function parseSenmlCbor(payload: Uint8Array): SenmlRecord[] {
  if (payload.length === 0) return [];
  const pack = decodeCbor(FORMAT, payload);
  if (!isCborArray(pack)) throw new CodecError(FORMAT, 'a SenML pack is a CBOR array');
  return pack.map((item, index) => {
    if (!(item instanceof CborMap)) throw new CodecError(FORMAT, `record ${index} is not a CBOR map`);
    const record: Record<string, unknown> = {};
    for (const [key, value] of item.entries) {
      const label = typeof key === 'bigint' || typeof key === 'string' ? BY_KEY.get(key) : undefined;
      if (label === undefined) {
        if (typeof key === 'string' && key.endsWith('_')) throw new CodecError(FORMAT, `record ${index}: unknown must-understand label "${key}"`);
        continue;
      }
      if (TEXT.has(label)) record[label] = typeof value === 'string' ? value : wrongType(index, label, 'a text string');
      else if (label === 'vb') record[label] = typeof value === 'boolean' ? value : wrongType(index, label, 'a boolean');
      else if (label === 'vd') record[label] = value instanceof Uint8Array ? value : wrongType(index, label, 'a byte string');
      else {
        const number = numeric(value, label === 'bt' || label === 't') ?? wrongType(index, label, 'a number');
        // SenML numbers are JSON numbers (RFC 8428 6): no NaN, no infinities.
        if (typeof number === 'number' && !Number.isFinite(number)) wrongType(index, label, 'a finite number');
        record[label] = EXACT.has(label) ? number : Number(number);
      }
    }
    return record;
  });
}

function wrongType(index: number, label: string, kind: string): never {
  throw new CodecError(FORMAT, `record ${index}: "${label}" must be ${kind}`);
}

/** Integer (exact), float, decimal fraction 4([exponent, mantissa]), or for times epoch date/time 1(seconds). */
function numeric(value: CborValue, time: boolean): number | bigint | undefined {
  if (typeof value === 'bigint' || typeof value === 'number') return value;
  if (value instanceof CborTag && value.tag === 4 && isCborArray(value.value)) {
    const [exponent, mantissa] = value.value;
    if (value.value.length === 2 && typeof exponent === 'bigint' && typeof mantissa === 'bigint') return Number(`${mantissa}e${exponent}`);
  }
  if (time && value instanceof CborTag && value.tag === 1) return numeric(value.value, false);
  return undefined;
}

/** Writes records as SenML CBOR: definite lengths, integer labels, integers where the value is whole. */
export function serializeSenmlCbor(pack: readonly SenmlRecord[]): Uint8Array {
  return encodeCbor(
    FORMAT,
    pack.map((record) => {
      const entries: Array<readonly [CborValue, CborValue]> = [];
      for (const [label, key] of LABELS) {
        const value = record[label];
        if (value === undefined) continue;
        if (typeof value === 'number' && !Number.isFinite(value)) throw new CodecError(FORMAT, `"${label}" ${value} is not a SenML number`);
        // v/bv/s/bs keep the wire kind the value has; times and versions are integers when whole.
        const item = typeof value === 'number' && !EXACT.has(label) && Number.isSafeInteger(value) ? BigInt(value) : value;
        entries.push([key, item]);
      }
      return new CborMap(entries);
    }),
  );
}

/** Decodes SenML CBOR into LwM2M records (see senmlToRecords for names, types and times). */
export function decodeSenmlCbor(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  return senmlToRecords(FORMAT, parseSenmlCbor(payload), options);
}

export function encodeSenmlCbor(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  return serializeSenmlCbor(recordsToSenml(FORMAT, records, options));
}

/** The paths of a Read-Composite / Observe-Composite request body. */
export function decodeSenmlCborPaths(payload: Uint8Array): string[] {
  return senmlToPaths(FORMAT, parseSenmlCbor(payload));
}

export function encodeSenmlCborPaths(paths: readonly string[]): Uint8Array {
  return serializeSenmlCbor(pathsToSenml(FORMAT, paths));
}
