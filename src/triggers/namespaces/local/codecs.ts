import { Decoder as CborDecoder, Encoder as CborEncoder } from 'cbor-x';
import { parse as parseCsv } from 'csv-parse/sync';
import { XMLParser } from 'fast-xml-parser';
import { unpack } from 'msgpackr';
import protobuf from 'protobufjs';
import { ScriptArgumentError } from '../namespace.js';
import { bytesArg, type LocalNamespace } from './local.js';

// Plain RFC 8949 (no cbor-x record extension), maps sized to their entries: what devices expect.
const cbor = new CborEncoder({ useRecords: false, variableMapSize: true, mapsAsObjects: true });
const cborDecoder = new CborDecoder({ useRecords: false, mapsAsObjects: true });

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', parseTagValue: true, parseAttributeValue: true, processEntities: true });

/** Parsed .proto texts, by text: scripts pass the same schema on every run. */
const schemas = new Map<string, protobuf.Root>();

function messageType(protoText: unknown, typeName: unknown): protobuf.Type {
  if (typeof protoText !== 'string' || typeof typeName !== 'string') throw new ScriptArgumentError('give the .proto text and the message type name');
  let root = schemas.get(protoText);
  if (!root) {
    try {
      root = protobuf.parse(protoText, { keepCase: true }).root;
    } catch (error) {
      throw new ScriptArgumentError(`the .proto text does not parse: ${(error as Error).message}`);
    }
    if (schemas.size > 200) schemas.clear();
    schemas.set(protoText, root);
  }
  try {
    return root.lookupType(typeName);
  } catch {
    throw new ScriptArgumentError(`no message type ${typeName} in the .proto text`);
  }
}

/** Values scripts get back must be JSON: binary becomes hex, big integers become strings. */
function jsonSafe(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), jsonSafe(v)]));
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  return value;
}

function decoding<T>(what: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof ScriptArgumentError) throw error;
    throw new ScriptArgumentError(`not valid ${what}: ${(error as Error).message}`);
  }
}

/** `convert.*` codec functions. Binary data goes in and out as hex strings (or arrays of byte values in). */
export const codecs: LocalNamespace = {
  /** convert.xmlToObject(text) → object; attributes as "@name", text beside attributes as "#text". */
  xmlToObject: ([text]) => {
    if (typeof text !== 'string') throw new ScriptArgumentError('xmlToObject takes XML text');
    return decoding('XML', () => xml.parse(text, true) as unknown);
  },
  /** convert.csvToObjects(text, {delimiter?, columns? = true}) → array of objects keyed by the header row (or arrays with columns: false). */
  csvToObjects: ([text, options]) => {
    if (typeof text !== 'string') throw new ScriptArgumentError('csvToObjects takes CSV text');
    const opts = (typeof options === 'object' && options !== null ? options : {}) as { delimiter?: unknown; columns?: unknown };
    return decoding('CSV', () =>
      parseCsv(text, { columns: opts.columns !== false, delimiter: typeof opts.delimiter === 'string' ? opts.delimiter : ',', skip_empty_lines: true, trim: true }) as unknown,
    );
  },
  /** convert.cborToObject(hex) → the value (RFC 8949); byte strings come back as hex. */
  cborToObject: ([data]) => jsonSafe(decoding('CBOR', () => cborDecoder.decode(bytesArg(data, 'data')) as unknown)),
  /** convert.objectToCbor(value) → hex. */
  objectToCbor: ([value]) => Buffer.from(cbor.encode(value)).toString('hex'),
  /** convert.msgPackToObject(hex) → the value. */
  msgPackToObject: ([data]) => jsonSafe(decoding('MessagePack', () => unpack(bytesArg(data, 'data')) as unknown)),
  /** convert.protobufToObject(hex, protoText, "pkg.Message") → the message as an object (64-bit integers as strings). */
  protobufToObject: ([data, protoText, typeName]) => {
    const type = messageType(protoText, typeName);
    const message = decoding('protobuf', () => type.decode(bytesArg(data, 'data')));
    return type.toObject(message, { longs: String, bytes: String, enums: String, defaults: false });
  },
  /** convert.objectToProtobuf(object, protoText, "pkg.Message") → hex. */
  objectToProtobuf: ([value, protoText, typeName]) => {
    const type = messageType(protoText, typeName);
    const problem = type.verify(value as Record<string, unknown>);
    if (problem) throw new ScriptArgumentError(`the object does not fit ${String(typeName)}: ${problem}`);
    return Buffer.from(type.encode(type.fromObject(value as Record<string, unknown>)).finish()).toString('hex');
  },
};
