/**
 * Plain text (text/plain, Content-Format 0): one resource (instance) value as UTF-8 text, typed by the model.
 * Core spec 7.4.1 and Appendix C: integers and times as ASCII decimal, floats as decimal numbers, booleans
 * as "0"/"1", object links as "o:i", opaque as base64 (RFC 4648 section 4, padded).
 */
import { formatPath, type Lwm2mRecord, type ResourceType } from '../model.js';
import { CodecError } from './errors.js';
import {
  booleanOf,
  bytesOf,
  checkIntegerRange,
  dateOf,
  decodeUtf8,
  encodeUtf8,
  floatOf,
  formatObjlnk,
  fromBase64,
  integerOf,
  integerResult,
  makeRecord,
  modelType,
  objlnkOf,
  parseObjlnk,
  singleRecord,
  singleValuePath,
  stringOf,
  timeOf,
  toBase64,
  type CodecOptions,
} from './values.js';

const FORMAT = 'text';

/**
 * Decodes the value of the resource (instance) at `options.basePath`; its type comes from `options.models`,
 * else it is a string.
 * @example decodeText(utf8('100'), { basePath: '/3/0/9', models }) → [{ path: '/3/0/9', type: 'integer', value: 100 }]
 */
export function decodeText(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  const path = singleValuePath(FORMAT, options);
  const text = decodeUtf8(FORMAT, payload, 'payload');
  const type = modelType(options?.models, path) ?? 'string';
  const where = formatPath(path);
  return [makeRecord(where, type, parseTextValue(type, text, where))];
}

/** Encodes the one record whose path is `options.basePath`. */
export function encodeText(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  return encodeUtf8(formatTextValue(singleRecord(FORMAT, records, options)));
}

function parseTextValue(type: ResourceType, text: string, where: string): Lwm2mRecord['value'] {
  const fail = (expected: string): never => {
    throw new CodecError(FORMAT, `${where}: "${text.length > 40 ? `${text.slice(0, 40)}…` : text}" is not ${expected}`);
  };
  switch (type) {
    case 'string':
    case 'corelnk':
      return text;
    case 'integer':
    case 'unsigned':
    case 'time': {
      if (!(type === 'unsigned' ? /^\d+$/ : /^-?\d+$/).test(text)) fail(type === 'time' ? 'a time (integer seconds)' : `an ${type} number`);
      const value = checkIntegerRange(FORMAT, BigInt(text), type, where);
      return type === 'time' ? dateOf(FORMAT, value, where) : integerResult(value);
    }
    case 'float': {
      if (!/^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) fail('a decimal number');
      const value = Number(text);
      return Number.isFinite(value) ? value : fail('a finite number');
    }
    case 'boolean':
      return text === '1' ? true : text === '0' ? false : fail('a boolean ("0" or "1")');
    case 'objlnk':
      return parseObjlnk(FORMAT, text, where);
    case 'opaque':
      return fromBase64(FORMAT, text, 'base64', where);
    case 'none':
      throw new CodecError(FORMAT, `${where} has no value (type none)`);
  }
}

function formatTextValue(record: Lwm2mRecord): string {
  switch (record.type) {
    case 'string':
    case 'corelnk':
      return stringOf(FORMAT, record);
    case 'integer':
    case 'unsigned':
      return integerOf(FORMAT, record, record.type).toString();
    case 'time':
      return timeOf(FORMAT, record).toString();
    case 'float':
      return plainDecimal(floatOf(FORMAT, record, true));
    case 'boolean':
      return booleanOf(FORMAT, record) ? '1' : '0';
    case 'objlnk':
      return formatObjlnk(objlnkOf(FORMAT, record));
    case 'opaque':
      return toBase64(bytesOf(FORMAT, record), 'base64');
    case 'none':
      throw new CodecError(FORMAT, `${record.path} has no value (type none)`);
  }
}

/** The shortest decimal that reads back as the same double, without an exponent (Appendix C writes "0.00000000006667"). */
export function plainDecimal(value: number): string {
  const shortest = String(value);
  const match = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(shortest);
  if (!match) return shortest;
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match;
  const digits = whole + fraction;
  const point = whole.length + Number(exponent);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
