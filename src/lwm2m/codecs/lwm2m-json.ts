/**
 * LwM2M JSON (application/vnd.oma.lwm2m+json, Content-Format 11543; 1543 before registration), the LwM2M 1.0
 * format of TS 1.0 section 6.4.4, still accepted by 1.1+ servers: `{"bn": base name, "bt": base time,
 * "e": [{"n": name, "v" | "sv" | "bv" | "ov": value, "t": time}]}`. It predates RFC 8428: "v" numbers,
 * "sv" strings (and opaque as base64), "bv" booleans, "ov" object links "o:i"; a time is bt + t, and only
 * values of 0 or below are relative to now (the SenML draft it follows), so "bt":25462634 is absolute.
 */
import { formatPath, type Lwm2mRecord, type ResourceType, type ResourceValue } from '../model.js';
import { CodecError } from './errors.js';
import { isJsonObject, jsonNumber, parseJson, type JsonValue } from './json-text.js';
import {
  booleanOf,
  bytesOf,
  canonicalRecords,
  checkUnique,
  type CodecOptions,
  depth,
  describe,
  encodeUtf8,
  floatOf,
  formatObjlnk,
  fromBase64,
  integerOf,
  makeRecord,
  modelType,
  numericValue,
  objlnkOf,
  parseBasePath,
  parseObjlnk,
  stringOf,
  timeOf,
  toBase64,
  valuePath,
} from './values.js';

const FORMAT = 'json';
const VALUE_KEYS = ['v', 'sv', 'bv', 'ov'] as const;

/**
 * Decodes LwM2M JSON; names resolve against `bn` (a missing leading "/" is added), values are typed by
 * `options.models` or by their key. An empty payload is no records.
 * @example decodeLwm2mJson(utf8('{"bn":"/3/0/","e":[{"n":"9","v":95}]}'), { models }) → [{ path: '/3/0/9', type: 'integer', value: 95 }]
 */
export function decodeLwm2mJson(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  if (payload.length === 0) return [];
  const base = parseBasePath(FORMAT, options);
  const now = options?.now ?? Date.now() / 1000;
  const root = parseJson(FORMAT, payload);
  if (!isJsonObject(root)) throw new CodecError(FORMAT, 'the payload is a JSON object {"bn", "bt", "e"}');
  const bn = optional(root.bn, 'string', '"bn"') ?? '';
  const bt = optional(root.bt, 'number', '"bt"');
  if (!Array.isArray(root.e)) throw new CodecError(FORMAT, '"e" (the array of entries) is missing');
  const records = (root.e as readonly JsonValue[]).map((entry, index) => {
    if (!isJsonObject(entry)) throw new CodecError(FORMAT, `entry ${index} is not a JSON object`);
    const name = bn + (optional(entry.n, 'string', `entry ${index} "n"`) ?? '');
    const path = valuePath(FORMAT, name.startsWith('/') ? name : `/${name}`, base);
    const where = formatPath(path);
    const keys = VALUE_KEYS.filter((key) => entry[key] !== undefined);
    if (keys.length !== 1) throw new CodecError(FORMAT, `${where}: entry ${index} has ${keys.length === 0 ? 'no value' : `several values (${keys.join(', ')})`}`);
    const [type, value] = typedValue(entry, keys[0] ?? 'v', modelType(options?.models, path), where);
    const t = optional(entry.t, 'number', `entry ${index} "t"`);
    const time = t === undefined && bt === undefined ? undefined : Number(bt ?? 0) + Number(t ?? 0);
    return makeRecord(path, type, value, time === undefined || time === 0 ? undefined : time < 0 ? now + time : time);
  });
  return checkUnique(FORMAT, records);
}

function optional<K extends 'string' | 'number' | 'boolean'>(
  value: JsonValue | undefined,
  kind: K,
  what: string,
): (K extends 'string' ? string : K extends 'number' ? number | bigint : boolean) | undefined {
  if (value === undefined) return undefined;
  if ((typeof value === 'bigint' ? 'number' : typeof value) !== kind) throw new CodecError(FORMAT, `${what} must be a ${kind}`);
  return value as K extends 'string' ? string : K extends 'number' ? number | bigint : boolean;
}

function typedValue(entry: { readonly [key: string]: JsonValue }, key: (typeof VALUE_KEYS)[number], type: ResourceType | undefined, where: string): [ResourceType, ResourceValue] {
  const value = entry[key];
  const wrong = (): never => {
    throw new CodecError(FORMAT, `${where}: ${JSON.stringify(key)} with ${describe(value)} does not fit ${type === undefined ? 'here' : `type ${type}`}`);
  };
  if (key === 'v') {
    if (typeof value !== 'number' && typeof value !== 'bigint') return wrong();
    return numericValue(FORMAT, value, type, where) ?? wrong();
  }
  if (key === 'bv') return typeof value === 'boolean' && (type === undefined || type === 'boolean') ? ['boolean', value] : wrong();
  if (typeof value !== 'string') return wrong();
  if (key === 'ov') return type === undefined || type === 'objlnk' ? ['objlnk', parseObjlnk(FORMAT, value, where)] : wrong();
  if (type === 'opaque') return ['opaque', fromBase64(FORMAT, value, 'base64', where)];
  return type === undefined || type === 'string' || type === 'corelnk' ? [type ?? 'string', value] : wrong();
}

/**
 * Encodes records under `options.basePath`: `bn` is the request path (with a trailing "/" when the records
 * lie below it), each entry's `n` the rest of its path, `t` its absolute time in seconds.
 */
export function encodeLwm2mJson(given: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  const base = parseBasePath(FORMAT, options);
  const basePath = formatPath(base);
  const records = checkUnique(FORMAT, canonicalRecords(FORMAT, given, base));
  const bn = depth(base) > 0 && records.every((record) => record.path === basePath) ? basePath : depth(base) === 0 ? '/' : `${basePath}/`;
  const entries = records.map((record) => {
    const fields: string[] = [];
    if (record.path !== bn) fields.push(`"n":${JSON.stringify(record.path.slice(bn.length))}`);
    fields.push(valueField(record));
    if (record.time !== undefined) {
      if (!Number.isFinite(record.time) || record.time <= 0) throw new CodecError(FORMAT, `${record.path}: time ${record.time} is not an absolute time`);
      fields.push(`"t":${jsonNumber(FORMAT, record.time)}`);
    }
    return `{${fields.join(',')}}`;
  });
  return encodeUtf8(`{"bn":${JSON.stringify(bn)},"e":[${entries.join(',')}]}`);
}

function valueField(record: Lwm2mRecord): string {
  switch (record.type) {
    case 'string':
    case 'corelnk':
      return `"sv":${JSON.stringify(stringOf(FORMAT, record))}`;
    case 'integer':
    case 'unsigned':
      return `"v":${jsonNumber(FORMAT, integerOf(FORMAT, record, record.type))}`;
    case 'time':
      return `"v":${jsonNumber(FORMAT, timeOf(FORMAT, record))}`;
    case 'float':
      return `"v":${jsonNumber(FORMAT, floatOf(FORMAT, record, true))}`;
    case 'boolean':
      return `"bv":${booleanOf(FORMAT, record)}`;
    case 'opaque':
      return `"sv":${JSON.stringify(toBase64(bytesOf(FORMAT, record), 'base64'))}`;
    case 'objlnk':
      return `"ov":${JSON.stringify(formatObjlnk(objlnkOf(FORMAT, record)))}`;
    case 'none':
      throw new CodecError(FORMAT, `${record.path} has no value (type none)`);
  }
}
