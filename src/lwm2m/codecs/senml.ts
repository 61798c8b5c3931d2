/**
 * SenML (RFC 8428) as LwM2M 1.1+ uses it (Core 1.1 7.4.5 SenML JSON, 7.4.6 SenML CBOR): the record model shared
 * by both encodings, resolution of base fields (RFC 8428 4.6), and the mapping between resolved records and
 * LwM2M records: names are paths, `v` carries integer/unsigned/float/time, `vs` string and corelnk, `vb`
 * boolean, `vd` opaque, `vlo` (LwM2M's own field) object links "o:i".
 */
import { formatPath, type Lwm2mRecord, type ResourceType, type ResourceValue } from '../model.js';
import { CodecError, type FormatName } from './errors.js';
import {
  booleanOf,
  bytesOf,
  canonicalRecords,
  checkUnique,
  type CodecOptions,
  depth,
  floatOf,
  formatObjlnk,
  integerOf,
  makeRecord,
  modelType,
  numericValue,
  objlnkOf,
  parseBasePath,
  parseObjlnk,
  RELATIVE_TIME_LIMIT,
  stringOf,
  timeOf,
  toPath,
  valuePath,
} from './values.js';

/**
 * One SenML record with the fields LwM2M and RFC 8428 define. Numbers in `v`, `bv`, `s`, `bs` are bigint when
 * the wire had an integer (a JSON literal without fraction or exponent, a CBOR integer) and number otherwise,
 * so 64-bit integers stay exact.
 */
export interface SenmlRecord {
  readonly bn?: string | undefined;
  readonly bt?: number | undefined;
  readonly bu?: string | undefined;
  readonly bv?: number | bigint | undefined;
  readonly bs?: number | bigint | undefined;
  readonly bver?: number | undefined;
  readonly n?: string | undefined;
  readonly u?: string | undefined;
  readonly v?: number | bigint | undefined;
  readonly vs?: string | undefined;
  readonly vb?: boolean | undefined;
  readonly vd?: Uint8Array | undefined;
  /** LwM2M object link value "o:i" (Core 7.4.5; also the text key "vlo" in SenML CBOR). */
  readonly vlo?: string | undefined;
  readonly s?: number | bigint | undefined;
  readonly t?: number | undefined;
  readonly ut?: number | undefined;
}

/** The SenML version this implements (RFC 8428 4.4). */
const SENML_VERSION = 10;
const VALUE_FIELDS = ['v', 'vs', 'vb', 'vd', 'vlo'] as const;

/**
 * Resolves base fields (RFC 8428 4.6): name = bn + n, time = bt + t (absent when both are), unit = u or bu,
 * value = bv + v, sum = bs + s. Times stay as written; values below 2^28 are still relative to "now".
 * @throws CodecError for a bver newer than this implementation understands (RFC 8428 4.4)
 */
export function resolveSenml(format: FormatName, pack: readonly SenmlRecord[]): SenmlRecord[] {
  let bn = '';
  let bt: number | undefined;
  let bu: string | undefined;
  let bv: number | bigint | undefined;
  let bs: number | bigint | undefined;
  return pack.map((record, index) => {
    if (record.bver !== undefined && record.bver > SENML_VERSION) throw new CodecError(format, `record ${index}: SenML version ${record.bver} is newer than ${SENML_VERSION}`);
    bn = record.bn ?? bn;
    bt = record.bt ?? bt;
    bu = record.bu ?? bu;
    bv = record.bv ?? bv;
    bs = record.bs ?? bs;
    const t = record.t === undefined && bt === undefined ? undefined : (bt ?? 0) + (record.t ?? 0);
    const resolved: Record<string, unknown> = { n: bn + (record.n ?? '') };
    const unit = record.u ?? bu;
    if (unit !== undefined) resolved.u = unit;
    if (record.v !== undefined) resolved.v = add(bv, record.v);
    if (record.s !== undefined) resolved.s = add(bs, record.s);
    for (const key of ['vs', 'vb', 'vd', 'vlo', 'ut'] as const) if (record[key] !== undefined) resolved[key] = record[key];
    if (t !== undefined) resolved.t = t;
    return resolved;
  });
}

function add(base: number | bigint | undefined, value: number | bigint): number | bigint {
  if (base === undefined) return value;
  return typeof base === 'bigint' && typeof value === 'bigint' ? base + value : Number(base) + Number(value);
}

/**
 * LwM2M records of a SenML pack. Names must be paths of resources (instances) inside `options.basePath`;
 * `options.models` types the values, else the field decides (`v` integer or float as written, `vs` string…).
 * Times resolve per RFC 8428 4.5.3: 2^28 and above are absolute, below are relative to `options.now`, 0 is
 * "now" and gives a record without time.
 */
export function senmlToRecords(format: FormatName, pack: readonly SenmlRecord[], options: CodecOptions | undefined): Lwm2mRecord[] {
  const base = parseBasePath(format, options);
  const now = options?.now ?? Date.now() / 1000;
  const records = resolveSenml(format, pack).map((record, index) => {
    const name = record.n ?? '';
    const fields = VALUE_FIELDS.filter((field) => record[field] !== undefined);
    if (fields.length !== 1) throw new CodecError(format, `record ${index} (${name || 'no name'}) has ${fields.length === 0 ? 'no value' : `several values (${fields.join(', ')})`}`);
    const path = valuePath(format, name.startsWith('/') ? name : `/${name}`, base);
    const where = formatPath(path);
    const [type, value] = typedValue(format, record, modelType(options?.models, path), where);
    const time = record.t === undefined || record.t === 0 ? undefined : record.t < RELATIVE_TIME_LIMIT ? now + record.t : record.t;
    return makeRecord(where, type, value, time);
  });
  return checkUnique(format, records);
}

function wrongField(format: FormatName, where: string, type: ResourceType | undefined, field: string): never {
  throw new CodecError(format, `${where}: "${field}" does not fit type ${type}`);
}

function typedValue(format: FormatName, record: SenmlRecord, type: ResourceType | undefined, where: string): [ResourceType, ResourceValue] {
  if (record.v !== undefined) return numericValue(format, record.v, type, where) ?? wrongField(format, where, type, 'v');
  if (record.vs !== undefined) return type === undefined || type === 'string' || type === 'corelnk' ? [type ?? 'string', record.vs] : wrongField(format, where, type, 'vs');
  if (record.vb !== undefined) return type === undefined || type === 'boolean' ? ['boolean', record.vb] : wrongField(format, where, type, 'vb');
  if (record.vd !== undefined) return type === undefined || type === 'opaque' ? ['opaque', record.vd] : wrongField(format, where, type, 'vd');
  return type === undefined || type === 'objlnk' ? ['objlnk', parseObjlnk(format, record.vlo ?? '', where)] : wrongField(format, where, type, 'vlo');
}

/**
 * SenML records for LwM2M records under `options.basePath`: below an object, instance or resource path the
 * first record carries that path as `bn` and the others a relative `n` (as in the Core spec's /3/0 example);
 * for `/` (composite operations, Send) every record has its full path in `n`. A time becomes `bt` when it
 * changes; a record without time after timed ones gets `bt` 0 ("now").
 */
export function recordsToSenml(format: FormatName, given: readonly Lwm2mRecord[], options: CodecOptions | undefined): SenmlRecord[] {
  const base = parseBasePath(format, options);
  const records = checkUnique(format, canonicalRecords(format, given, base));
  const baseName = depth(base) === 0 ? '' : records.every((record) => record.path === formatPath(base)) ? formatPath(base) : `${formatPath(base)}/`;
  let bn = '';
  let bt: number | undefined;
  return records.map((record) => {
    const out: { -readonly [K in keyof SenmlRecord]: SenmlRecord[K] } = {};
    if (bn === '' && baseName !== '') out.bn = bn = baseName;
    if (record.time !== bt) {
      const time = record.time ?? 0;
      if (!Number.isFinite(time) || (record.time !== undefined && time < RELATIVE_TIME_LIMIT)) {
        throw new CodecError(format, `${record.path}: time ${record.time} cannot be written as an absolute SenML time (from 2^28 s, RFC 8428 4.5.3)`);
      }
      out.bt = time;
      bt = record.time;
    }
    if (record.path !== bn) {
      if (!record.path.startsWith(bn)) throw new CodecError(format, `${record.path} is not below ${bn}`);
      out.n = record.path.slice(bn.length);
    }
    setValue(format, out, record);
    return out;
  });
}

function setValue(format: FormatName, out: { -readonly [K in keyof SenmlRecord]: SenmlRecord[K] }, record: Lwm2mRecord): void {
  switch (record.type) {
    case 'string':
    case 'corelnk':
      out.vs = stringOf(format, record);
      return;
    case 'integer':
    case 'unsigned':
      out.v = integerOf(format, record, record.type);
      return;
    case 'time':
      out.v = timeOf(format, record);
      return;
    case 'float':
      // RFC 8428: SenML values are JSON numbers, which have no NaN or infinities (in CBOR neither, 6).
      out.v = floatOf(format, record, true);
      return;
    case 'boolean':
      out.vb = booleanOf(format, record);
      return;
    case 'opaque':
      out.vd = bytesOf(format, record);
      return;
    case 'objlnk':
      out.vlo = formatObjlnk(objlnkOf(format, record));
      return;
    case 'none':
      throw new CodecError(format, `${record.path} has no value (type none)`);
  }
}

/**
 * Paths of a Read-Composite / Observe-Composite request (Core 6.3.8, 7.4.5): records with only names, which
 * may point at the root, an object, an instance, a resource or a resource instance.
 */
export function senmlToPaths(format: FormatName, pack: readonly SenmlRecord[]): string[] {
  return resolveSenml(format, pack).map((record, index) => {
    const extra = [...VALUE_FIELDS, 's', 't'].filter((field) => record[field as keyof SenmlRecord] !== undefined);
    if (extra.length > 0) throw new CodecError(format, `record ${index} of a path list carries ${extra.join(', ')}`);
    const name = record.n ?? '';
    return formatPath(toPath(format, name.startsWith('/') ? name : `/${name}`));
  });
}

/** The SenML records of a path list: each full path in `n`. */
export function pathsToSenml(format: FormatName, paths: readonly string[]): SenmlRecord[] {
  return paths.map((path) => ({ n: formatPath(toPath(format, path)) }));
}
