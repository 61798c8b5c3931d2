/**
 * SenML JSON (application/senml+json, Content-Format 110; RFC 8428 section 5, LwM2M Core 1.1 7.4.5, 1.2.2 7.5.6): an array of
 * objects with the labels of RFC 8428 Table 4 plus LwM2M's "vlo". Opaque values ("vd") are base64url
 * without padding (RFC 8428 4.3); decoding also accepts padding.
 */
import type { Lwm2mRecord } from '../model.js';
import { CodecError } from './errors.js';
import { isJsonObject, jsonNumber, parseJson, type JsonValue } from './json-text.js';
import { pathsToSenml, recordsToSenml, senmlToPaths, senmlToRecords, type SenmlRecord } from './senml.js';
import { encodeUtf8, fromBase64, toBase64, type CodecOptions } from './values.js';

const FORMAT = 'senml-json';

/** Labels in the order they are written (base fields first, as in RFC 8428 and the Core spec examples). */
const ORDER = ['bn', 'bt', 'bu', 'bv', 'bs', 'bver', 'n', 'u', 'v', 'vs', 'vb', 'vd', 'vlo', 's', 't', 'ut'] as const;
type Label = (typeof ORDER)[number];
const KIND: Record<Label, 'string' | 'number' | 'boolean'> = {
  bn: 'string', bt: 'number', bu: 'string', bv: 'number', bs: 'number', bver: 'number', n: 'string', u: 'string',
  v: 'number', vs: 'string', vb: 'boolean', vd: 'string', vlo: 'string', s: 'number', t: 'number', ut: 'number',
};

/**
 * Parses SenML JSON into records as written (base fields unresolved). An empty payload is an empty pack.
 * @throws CodecError for invalid JSON, a non-array, a field of the wrong JSON type, or an unknown
 *   must-understand label (ending in "_", RFC 8428 4.4)
 */
export function parseSenmlJson(payload: Uint8Array): SenmlRecord[] {
  if (payload.length === 0) return [];
  const json = parseJson(FORMAT, payload);
  if (!Array.isArray(json)) throw new CodecError(FORMAT, 'a SenML pack is a JSON array');
  return (json as readonly JsonValue[]).map((item, index) => {
    if (!isJsonObject(item)) throw new CodecError(FORMAT, `record ${index} is not a JSON object`);
    const record: Record<string, unknown> = {};
    for (const [label, value] of Object.entries(item)) {
      const kind = KIND[label as Label] as string | undefined;
      if (kind === undefined) {
        if (label.endsWith('_')) throw new CodecError(FORMAT, `record ${index}: unknown must-understand label "${label}"`);
        continue;
      }
      const actual = typeof value === 'bigint' ? 'number' : typeof value;
      if (actual !== kind) throw new CodecError(FORMAT, `record ${index}: "${label}" must be a ${kind}`);
      if (label === 'vd') record.vd = fromBase64(FORMAT, value as string, 'base64url', `record ${index} "vd"`);
      else if (kind === 'number' && !['v', 'bv', 's', 'bs'].includes(label)) record[label] = Number(value);
      else record[label] = value;
    }
    return record;
  });
}

/** Writes records as SenML JSON (compact, labels in a fixed order). */
export function serializeSenmlJson(pack: readonly SenmlRecord[]): string {
  const records = pack.map((record) => {
    const fields: string[] = [];
    for (const label of ORDER) {
      const value = record[label];
      if (value === undefined) continue;
      let text: string;
      if (value instanceof Uint8Array) text = JSON.stringify(toBase64(value, 'base64url'));
      else if (typeof value === 'number' || typeof value === 'bigint') {
        text = jsonNumber(FORMAT, value);
      } else text = JSON.stringify(value);
      fields.push(`"${label}":${text}`);
    }
    return `{${fields.join(',')}}`;
  });
  return `[${records.join(',')}]`;
}

/**
 * Decodes SenML JSON into LwM2M records (see senmlToRecords for names, types and times).
 * @example decodeSenmlJson(utf8('[{"bn":"/3/0/","n":"9","v":95}]'), { models }) → [{ path: '/3/0/9', type: 'integer', value: 95 }]
 */
export function decodeSenmlJson(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  return senmlToRecords(FORMAT, parseSenmlJson(payload), options);
}

export function encodeSenmlJson(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  return encodeUtf8(serializeSenmlJson(recordsToSenml(FORMAT, records, options)));
}

/** The paths of a Read-Composite / Observe-Composite request body, e.g. `[{"n":"/3/0/9"},{"n":"/1/0/1"}]`. */
export function decodeSenmlJsonPaths(payload: Uint8Array): string[] {
  return senmlToPaths(FORMAT, parseSenmlJson(payload));
}

export function encodeSenmlJsonPaths(paths: readonly string[]): Uint8Array {
  return encodeUtf8(serializeSenmlJson(pathsToSenml(FORMAT, paths)));
}
