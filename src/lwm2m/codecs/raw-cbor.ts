/**
 * Plain CBOR (application/cbor, Content-Format 60; Core 1.1 section 7.4.3): one resource (instance) value as a
 * single CBOR data item, typed as Appendix C says for the CBOR formats. Time is written as epoch seconds
 * under tag 1 (RFC 8949 3.4.2, as Leshan does); any of the Table C.-2 forms is read.
 */
import { formatPath, type Lwm2mRecord } from '../model.js';
import { decodeCbor, encodeCbor } from './cbor-wire.js';
import { typedValue, valueItem } from './cbor-values.js';
import { makeRecord, modelType, singleRecord, singleValuePath, type CodecOptions } from './values.js';

const FORMAT = 'raw-cbor';

/** @example decodeRawCbor(hex('1864'), { basePath: '/3/0/9' }) → [{ path: '/3/0/9', type: 'integer', value: 100 }] */
export function decodeRawCbor(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  const path = singleValuePath(FORMAT, options);
  const [type, value] = typedValue(FORMAT, decodeCbor(FORMAT, payload), modelType(options?.models, path), formatPath(path));
  return [makeRecord(path, type, value)];
}

export function encodeRawCbor(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  return encodeCbor(FORMAT, valueItem(FORMAT, singleRecord(FORMAT, records, options), true));
}
