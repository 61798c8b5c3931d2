/**
 * Values in the CBOR formats (plain CBOR 60 and LwM2M CBOR 11544), as Core Appendix C Table C.-2 has them:
 * integers, floats, booleans, text strings (string, corelnk, and objlnk as "o:i"), byte strings (opaque),
 * and Time as epoch seconds (an integer, tagged 1 or not) or an RFC 3339 date/time string under tag 0
 * ("an unsigned integer or a date/time string, as defined in Section 2.4.1 of RFC 7049").
 */
import type { Lwm2mRecord, ResourceType, ResourceValue } from '../model.js';
import { CborMap, CborTag, isCborArray, type CborValue } from './cbor-wire.js';
import { CodecError } from './errors.js';
import {
  booleanOf,
  bytesOf,
  checkIntegerRange,
  dateOf,
  floatOf,
  formatObjlnk,
  integerOf,
  integerResult,
  objlnkOf,
  parseObjlnk,
  stringOf,
  timeOf,
} from './values.js';

type CborFormat = 'cbor' | 'raw-cbor';

export function describeItem(item: CborValue): string {
  if (item instanceof CborMap) return 'a map';
  if (item instanceof CborTag) return `tag ${item.tag}`;
  if (item instanceof Uint8Array) return 'a byte string';
  if (isCborArray(item)) return 'an array';
  return typeof item === 'string' ? `text "${item}"` : String(item);
}

/** A leaf as Table C.-2 has it for the CBOR formats; shared with plain CBOR (Content-Format 60). */
export function typedValue(format: CborFormat, item: CborValue, type: ResourceType | undefined, where: string): [ResourceType, ResourceValue] {
  switch (type) {
    case undefined:
      if (typeof item === 'bigint') return [item > 2n ** 63n - 1n ? 'unsigned' : 'integer', integerResult(checkIntegerRange(format, item, item < 0n ? 'integer' : 'unsigned', where))];
      if (typeof item === 'number') return ['float', item];
      if (typeof item === 'string') return ['string', item];
      if (typeof item === 'boolean') return ['boolean', item];
      if (item instanceof Uint8Array) return ['opaque', item];
      if (item instanceof CborTag && (item.tag === 0 || item.tag === 1)) return ['time', timeValue(format, item, where) ?? misfit(format, item, type, where)];
      return ['float', decimalFraction(item) ?? misfit(format, item, type, where)];
    case 'string':
    case 'corelnk':
      return typeof item === 'string' ? [type, item] : misfit(format, item, type, where);
    case 'integer':
    case 'unsigned':
      return typeof item === 'bigint' ? [type, integerResult(checkIntegerRange(format, item, type, where))] : misfit(format, item, type, where);
    case 'float':
      // An integer (or a decimal fraction) is accepted where a float is due: the value is the same number.
      return typeof item === 'number' || typeof item === 'bigint' ? [type, Number(item)] : [type, decimalFraction(item) ?? misfit(format, item, type, where)];
    case 'boolean':
      return typeof item === 'boolean' ? [type, item] : misfit(format, item, type, where);
    case 'opaque':
      return item instanceof Uint8Array ? [type, item] : misfit(format, item, type, where);
    case 'objlnk':
      return typeof item === 'string' ? [type, parseObjlnk(format, item, where)] : misfit(format, item, type, where);
    case 'time':
      return [type, timeValue(format, item, where) ?? misfit(format, item, type, where)];
    case 'none':
      return misfit(format, item, type, where);
  }
}

function misfit(format: CborFormat, item: CborValue, type: ResourceType | undefined, where: string): never {
  throw new CodecError(format, `${where}: ${describeItem(item)} does not fit ${type === undefined ? 'an LwM2M value' : `type ${type}`}`);
}

/** A decimal fraction 4([exponent, mantissa]) (RFC 8949 3.4.4), which some clients (Anjay) accept and send for floats. */
function decimalFraction(item: CborValue): number | undefined {
  if (!(item instanceof CborTag) || item.tag !== 4 || !isCborArray(item.value) || item.value.length !== 2) return undefined;
  const [exponent, mantissa] = item.value;
  return typeof exponent === 'bigint' && typeof mantissa === 'bigint' ? Number(`${mantissa}e${exponent}`) : undefined;
}

/** RFC 8949 3.4.1 / 3.4.2: an integer (or float) of epoch seconds, tagged 1 or not, or a tag 0 RFC 3339 string. */
function timeValue(format: CborFormat, item: CborValue, where: string): Date | undefined {
  const content = item instanceof CborTag && item.tag === 1 ? item.value : item;
  if (typeof content === 'bigint' || typeof content === 'number') return dateOf(format, content, where);
  if (item instanceof CborTag && item.tag === 0 && typeof item.value === 'string') {
    if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(item.value)) return undefined;
    const date = new Date(item.value);
    return Number.isNaN(date.getTime()) ? undefined : date;
  }
  return undefined;
}

/** A value item per Table C.-2; `timeTag` wraps times in tag 1 (plain CBOR does, as Leshan expects). */
export function valueItem(format: CborFormat, record: Lwm2mRecord, timeTag: boolean): CborValue {
  switch (record.type) {
    case 'string':
    case 'corelnk':
      return stringOf(format, record);
    case 'integer':
    case 'unsigned':
      return integerOf(format, record, record.type);
    case 'time': {
      const seconds = checkIntegerRange(format, timeOf(format, record), 'time', record.path);
      return timeTag ? new CborTag(1, seconds) : seconds;
    }
    case 'float':
      return floatOf(format, record, false);
    case 'boolean':
      return booleanOf(format, record);
    case 'opaque':
      return bytesOf(format, record);
    case 'objlnk':
      return formatObjlnk(objlnkOf(format, record));
    case 'none':
      throw new CodecError(format, `${record.path} has no value (type none)`);
  }
}
