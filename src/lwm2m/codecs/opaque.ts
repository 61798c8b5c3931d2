/**
 * Opaque (application/octet-stream, Content-Format 42): the raw bytes of one opaque resource (instance),
 * e.g. a firmware package (Core spec 7.4.2).
 */
import type { Lwm2mRecord } from '../model.js';
import { CodecError } from './errors.js';
import { bytesOf, makeRecord, modelType, singleRecord, singleValuePath, type CodecOptions } from './values.js';

const FORMAT = 'opaque';

/** @example decodeOpaque(bytes, { basePath: '/5/0/0' }) → [{ path: '/5/0/0', type: 'opaque', value: bytes }] */
export function decodeOpaque(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  const path = singleValuePath(FORMAT, options);
  const type = modelType(options?.models, path);
  if (type !== undefined && type !== 'opaque') throw new CodecError(FORMAT, `${options?.basePath} is ${type}, not opaque`);
  return [makeRecord(path, 'opaque', new Uint8Array(payload))];
}

export function encodeOpaque(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  const record = singleRecord(FORMAT, records, options);
  if (record.type !== 'opaque') throw new CodecError(FORMAT, `${record.path} is ${record.type}, only opaque values travel as opaque`);
  return new Uint8Array(bytesOf(FORMAT, record));
}
