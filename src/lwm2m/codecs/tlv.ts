/**
 * OMA TLV (application/vnd.oma.lwm2m+tlv, Content-Format 11542; 1542 before registration), TS 1.0
 * section 6.4.3 (Core 1.2.2 section 7.5.5). Each TLV is a type byte (bits 7-6: Object Instance 00, Resource
 * Instance 01, Multiple Resource 10, Resource with Value 11; bit 5: 16-bit identifier; bits 4-3: length field
 * of 0/8/16/24 bits; bits 2-0: the length itself when the field is 0 bits), the identifier, the length, and
 * the value or the nested TLVs. Identifiers are relative to the request path, so decoding needs it.
 */
import { formatPath, type Lwm2mPath, type Lwm2mRecord, type ResourceType } from '../model.js';
import { CodecError } from './errors.js';
import {
  booleanOf,
  bytesOf,
  checkIntegerRange,
  checkUnique,
  dateOf,
  decodeUtf8,
  depth,
  encodeUtf8,
  floatOf,
  integerOf,
  integerResult,
  makeRecord,
  modelType,
  objlnkOf,
  parseBasePath,
  recordPath,
  stringOf,
  timeOf,
  type CodecOptions,
} from './values.js';

const FORMAT = 'tlv';

export type TlvKind = 'objectInstance' | 'resourceInstance' | 'multipleResource' | 'resource';

/** One TLV as on the wire; `value` for Resource Instance / Resource with Value, `children` for the other two. */
export interface Tlv {
  readonly kind: TlvKind;
  readonly id: number;
  readonly value?: Uint8Array | undefined;
  readonly children?: readonly Tlv[] | undefined;
  /** Offset of the type byte in the payload (for error messages). */
  readonly offset?: number | undefined;
}

const KINDS: readonly TlvKind[] = ['objectInstance', 'resourceInstance', 'multipleResource', 'resource'];
/** The 24-bit length field caps one TLV's value at 16 MiB - 1 (Core 7.4.3). */
const MAX_LENGTH = 0xffffff;

// ---- wire level ----------------------------------------------------------------------------------------------

/**
 * Splits a payload into TLVs, nested ones included. What may nest where is checked here: Object Instances
 * hold resources, Multiple Resources hold Resource Instances, the other two hold a value.
 */
export function parseTlv(payload: Uint8Array): Tlv[] {
  return parseLevel(payload, 0, payload.length, undefined);
}

function parseLevel(bytes: Uint8Array, start: number, end: number, parent: TlvKind | undefined): Tlv[] {
  const tlvs: Tlv[] = [];
  let pos = start;
  while (pos < end) {
    const offset = pos;
    const type = bytes[pos++] ?? 0;
    const kind = KINDS[type >> 6] ?? 'resource';
    const idSize = type & 0x20 ? 2 : 1;
    const lengthSize = (type >> 3) & 0x03;
    if (pos + idSize + lengthSize > end) throw new CodecError(FORMAT, `truncated TLV header (${idSize + lengthSize + 1} bytes needed, ${end - offset} left)`, offset);
    const id = readUint(bytes, pos, idSize);
    pos += idSize;
    const length = lengthSize === 0 ? type & 0x07 : readUint(bytes, pos, lengthSize);
    pos += lengthSize;
    if (pos + length > end) throw new CodecError(FORMAT, `${kind} ${id} has length ${length} but only ${end - pos} bytes are left${parent ? ` in its ${parent}` : ''}`, offset);
    const allowed = parent === undefined || (parent === 'objectInstance' ? kind === 'resource' || kind === 'multipleResource' : parent === 'multipleResource' && kind === 'resourceInstance');
    if (!allowed) throw new CodecError(FORMAT, `a ${kind} cannot be inside a ${parent}`, offset);
    if (kind === 'objectInstance' || kind === 'multipleResource') tlvs.push({ kind, id, children: parseLevel(bytes, pos, pos + length, kind), offset });
    else tlvs.push({ kind, id, value: bytes.slice(pos, pos + length), offset });
    pos += length;
  }
  return tlvs;
}

function readUint(bytes: Uint8Array, at: number, size: number): number {
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + (bytes[at + i] ?? 0);
  return value;
}

/** Writes TLVs with the smallest identifier and length fields. */
export function serializeTlv(tlvs: readonly Tlv[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const tlv of tlvs) {
    const body = tlv.children === undefined ? (tlv.value ?? new Uint8Array(0)) : serializeTlv(tlv.children);
    if (!Number.isInteger(tlv.id) || tlv.id < 0 || tlv.id > 0xffff) throw new CodecError(FORMAT, `identifier ${tlv.id} does not fit 16 bits`);
    if (body.length > MAX_LENGTH) throw new CodecError(FORMAT, `${tlv.kind} ${tlv.id} is ${body.length} bytes, more than a TLV holds (${MAX_LENGTH})`);
    const idSize = tlv.id > 0xff ? 2 : 1;
    const lengthSize = body.length <= 7 ? 0 : body.length <= 0xff ? 1 : body.length <= 0xffff ? 2 : 3;
    const header = new Uint8Array(1 + idSize + lengthSize);
    header[0] = (KINDS.indexOf(tlv.kind) << 6) | (idSize === 2 ? 0x20 : 0) | (lengthSize << 3) | (lengthSize === 0 ? body.length : 0);
    writeUint(header, 1, idSize, tlv.id);
    writeUint(header, 1 + idSize, lengthSize, body.length);
    parts.push(header, body);
  }
  return new Uint8Array(Buffer.concat(parts));
}

function writeUint(bytes: Uint8Array, at: number, size: number, value: number): void {
  for (let i = size - 1; i >= 0; i--) {
    bytes[at + i] = value & 0xff;
    value = Math.floor(value / 256);
  }
}

// ---- records -------------------------------------------------------------------------------------------------

/**
 * Decodes a TLV payload read from `options.basePath` (an object, instance, resource or resource instance path);
 * values are typed by `options.models`, unknown resources come out as opaque bytes.
 * @example decodeTlv(hex('c10964'), { basePath: '/3/0', models }) → [{ path: '/3/0/9', type: 'integer', value: 100 }]
 */
export function decodeTlv(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  const base = parseBasePath(FORMAT, options);
  const records: Lwm2mRecord[] = [];
  // Containers may be empty, so their ids are checked here; values are checked by checkUnique.
  const containers = new Set<string>();
  const once = (path: Lwm2mPath, tlv: Tlv) => {
    const key = formatPath(path);
    if (containers.has(key)) throw new CodecError(FORMAT, `${key} appears twice`, tlv.offset);
    containers.add(key);
  };
  const value = (path: Lwm2mPath, tlv: Tlv) => records.push(decodeValue(path, tlv, options));
  const resources = (instance: Lwm2mPath, tlvs: readonly Tlv[], wanted?: number) => {
    for (const tlv of tlvs) {
      if (wanted !== undefined && tlv.id !== wanted) throw mismatch(tlv, 'resource', wanted);
      const resource = { ...instance, resourceId: tlv.id };
      once(resource, tlv);
      if (tlv.kind === 'resource') value(resource, tlv);
      else if (tlv.kind === 'multipleResource') for (const child of tlv.children ?? []) value({ ...resource, resourceInstanceId: child.id }, child);
      else throw misplaced(tlv, formatPath(instance));
    }
  };
  const tlvs = parseTlv(payload);
  switch (depth(base)) {
    case 0:
      throw new CodecError(FORMAT, 'TLV carries no object ids, so it needs an object (or deeper) request path, not /');
    case 1:
      for (const tlv of tlvs) {
        if (tlv.kind !== 'objectInstance') throw misplaced(tlv, formatPath(base));
        once({ ...base, instanceId: tlv.id }, tlv);
        resources({ ...base, instanceId: tlv.id }, tlv.children ?? []);
      }
      break;
    case 2:
      // Resources directly, or (as some clients answer) one Object Instance TLV wrapping them.
      for (const tlv of tlvs) {
        if (tlv.kind !== 'objectInstance') resources(base, [tlv]);
        else if (tlv.id === base.instanceId) resources(base, tlv.children ?? []);
        else throw mismatch(tlv, 'object instance', base.instanceId);
      }
      break;
    case 3:
      for (const tlv of tlvs) {
        if (tlv.kind === 'resourceInstance') value({ ...base, resourceInstanceId: tlv.id }, tlv);
        else if (tlv.kind === 'objectInstance' && tlv.id === base.instanceId) resources(base, tlv.children ?? [], base.resourceId);
        else if (tlv.kind === 'objectInstance') throw mismatch(tlv, 'object instance', base.instanceId);
        else resources({ ...base, resourceId: undefined }, [tlv], base.resourceId);
      }
      break;
    default:
      for (const tlv of tlvs) {
        if (tlv.kind === 'resourceInstance' && tlv.id === base.resourceInstanceId) value(base, tlv);
        else if (tlv.kind === 'multipleResource' && tlv.id === base.resourceId) {
          for (const child of tlv.children ?? []) {
            if (child.id !== base.resourceInstanceId) throw mismatch(child, 'resource instance', base.resourceInstanceId);
            value(base, child);
          }
        } else if (tlv.kind === 'resourceInstance') throw mismatch(tlv, 'resource instance', base.resourceInstanceId);
        else if (tlv.kind === 'multipleResource') throw mismatch(tlv, 'resource', base.resourceId);
        else throw misplaced(tlv, formatPath(base));
      }
  }
  return checkUnique(FORMAT, records);
}

function misplaced(tlv: Tlv, where: string): CodecError {
  return new CodecError(FORMAT, `a ${tlv.kind} TLV (id ${tlv.id}) does not belong under ${where}`, tlv.offset);
}

function mismatch(tlv: Tlv, what: string, expected: number | undefined): CodecError {
  return new CodecError(FORMAT, `${what} ${tlv.id} is not the requested ${what} ${expected}`, tlv.offset);
}

function decodeValue(path: Lwm2mPath, tlv: Tlv, options: CodecOptions | undefined): Lwm2mRecord {
  const bytes = tlv.value ?? new Uint8Array(0);
  const where = formatPath(path);
  const fail = (expected: string): never => {
    throw new CodecError(FORMAT, `${where}: ${bytes.length} bytes are not ${expected}`, tlv.offset);
  };
  const type: ResourceType = modelType(options?.models, path) ?? 'opaque';
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const integer = (signed: boolean): bigint => {
    if (bytes.length === 1) return BigInt(signed ? view.getInt8(0) : view.getUint8(0));
    if (bytes.length === 2) return BigInt(signed ? view.getInt16(0) : view.getUint16(0));
    if (bytes.length === 4) return BigInt(signed ? view.getInt32(0) : view.getUint32(0));
    if (bytes.length === 8) return signed ? view.getBigInt64(0) : view.getBigUint64(0);
    return fail('an integer (1, 2, 4 or 8 bytes)');
  };
  switch (type) {
    case 'string':
    case 'corelnk':
      return makeRecord(path, type, decodeUtf8(FORMAT, bytes, where));
    case 'integer':
    case 'unsigned':
      return makeRecord(path, type, integerResult(integer(type === 'integer')));
    case 'time':
      return makeRecord(path, type, dateOf(FORMAT, integer(true), where));
    case 'float':
      return makeRecord(path, type, bytes.length === 4 ? view.getFloat32(0) : bytes.length === 8 ? view.getFloat64(0) : fail('a float (4 or 8 bytes)'));
    case 'boolean':
      return makeRecord(path, type, bytes.length === 1 && (bytes[0] ?? 2) <= 1 ? bytes[0] === 1 : fail('a boolean (one byte, 0 or 1)'));
    case 'objlnk':
      return makeRecord(path, type, bytes.length === 4 ? { objectId: view.getUint16(0), instanceId: view.getUint16(2) } : fail('an object link (4 bytes)'));
    case 'opaque':
    case 'none':
      return makeRecord(path, 'opaque', bytes);
  }
}

/**
 * Encodes records under `options.basePath` as TLV: Object Instance TLVs for an object path, resources for an
 * instance path, one Resource with Value or Multiple Resource TLV for a resource path, one Resource Instance
 * TLV for a resource-instance path. Records keep their order, grouped by instance and resource.
 */
export function encodeTlv(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  const base = parseBasePath(FORMAT, options);
  const level = depth(base);
  if (level === 0) throw new CodecError(FORMAT, 'TLV carries no object ids, so it needs an object (or deeper) request path, not /');
  const instances = new Map<number, Map<number, { value?: Uint8Array; instances?: Map<number, Uint8Array> }>>();
  for (const record of records) {
    const path = recordPath(FORMAT, record, base);
    const instanceId = path.instanceId ?? 0;
    const resourceId = path.resourceId ?? 0;
    const resources = instances.get(instanceId) ?? new Map<number, { value?: Uint8Array; instances?: Map<number, Uint8Array> }>();
    instances.set(instanceId, resources);
    const resource = resources.get(resourceId) ?? {};
    resources.set(resourceId, resource);
    const bytes = encodeValue(record);
    if (path.resourceInstanceId === undefined) {
      if (resource.value !== undefined || resource.instances !== undefined) throw duplicate(record);
      resource.value = bytes;
    } else {
      if (resource.value !== undefined || resource.instances?.has(path.resourceInstanceId)) throw duplicate(record);
      resource.instances = (resource.instances ?? new Map<number, Uint8Array>()).set(path.resourceInstanceId, bytes);
    }
  }
  const resourceTlvs = (resources: Map<number, { value?: Uint8Array; instances?: Map<number, Uint8Array> }>): Tlv[] =>
    [...resources].map(([id, resource]) =>
      resource.instances === undefined
        ? { kind: 'resource', id, value: resource.value }
        : { kind: 'multipleResource', id, children: [...resource.instances].map(([ri, value]) => ({ kind: 'resourceInstance', id: ri, value })) },
    );
  if (level === 1) return serializeTlv([...instances].map(([id, resources]) => ({ kind: 'objectInstance', id, children: resourceTlvs(resources) })));
  const tlvs = [...instances.values()].flatMap(resourceTlvs);
  if (level === 4) return serializeTlv(tlvs.flatMap((tlv) => tlv.children ?? []));
  return serializeTlv(tlvs);
}

function duplicate(record: Lwm2mRecord): CodecError {
  return new CodecError(FORMAT, `${record.path} is given twice (or both as a value and as instances)`);
}

/** Values per Core Appendix C: integers in the fewest of 1/2/4/8 bytes, floats in 4 bytes when that is exact. */
function encodeValue(record: Lwm2mRecord): Uint8Array {
  switch (record.type) {
    case 'string':
    case 'corelnk':
      return encodeUtf8(stringOf(FORMAT, record));
    case 'integer':
      return integerBytes(integerOf(FORMAT, record, 'integer'), true);
    case 'unsigned':
      return integerBytes(integerOf(FORMAT, record, 'unsigned'), false);
    case 'time':
      return integerBytes(checkIntegerRange(FORMAT, timeOf(FORMAT, record), 'time', record.path), true);
    case 'float': {
      const value = floatOf(FORMAT, record, false);
      const single = Object.is(Math.fround(value), value);
      const view = new DataView(new ArrayBuffer(single ? 4 : 8));
      if (single) view.setFloat32(0, value);
      else view.setFloat64(0, value);
      return new Uint8Array(view.buffer);
    }
    case 'boolean':
      return Uint8Array.of(booleanOf(FORMAT, record) ? 1 : 0);
    case 'objlnk': {
      const link = objlnkOf(FORMAT, record);
      return Uint8Array.of(link.objectId >> 8, link.objectId & 0xff, link.instanceId >> 8, link.instanceId & 0xff);
    }
    case 'opaque':
      return new Uint8Array(bytesOf(FORMAT, record));
    case 'none':
      throw new CodecError(FORMAT, `${record.path} has no value (type none)`);
  }
}

function integerBytes(value: bigint, signed: boolean): Uint8Array {
  const size = [1, 2, 4, 8].find((bytes) => {
    const bits = BigInt(bytes * 8);
    return signed ? value >= -(1n << (bits - 1n)) && value < 1n << (bits - 1n) : value < 1n << bits;
  }) ?? 8;
  const view = new DataView(new ArrayBuffer(size));
  if (size === 8) {
    if (signed) view.setBigInt64(0, value);
    else view.setBigUint64(0, value);
  } else {
    const bits = BigInt(size * 8);
    const unsigned = value < 0n ? value + (1n << bits) : value;
    for (let i = size - 1, rest = unsigned; i >= 0; i--, rest >>= 8n) view.setUint8(i, Number(rest & 0xffn));
  }
  return new Uint8Array(view.buffer);
}
