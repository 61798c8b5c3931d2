import { ScriptArgumentError } from '../namespace.js';
import { bytesArg, type LocalNamespace } from './local.js';
import { decodeMccMnc } from './network.js';
import { delimitedStringToObject } from './text.js';

function flatten(value: unknown, separator: string, prefix: string, into: Record<string, unknown>): Record<string, unknown> {
  if (typeof value === 'object' && value !== null && Object.keys(value).length > 0) {
    for (const [key, child] of Object.entries(value)) flatten(child, separator, prefix === '' ? key : `${prefix}${separator}${key}`, into);
  } else if (prefix !== '') {
    into[prefix] = value;
  }
  return into;
}

/** Luhn check digit of a digit string (IMEI's 15th digit). */
function luhn(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

/** `convert.*` functions that need no codec library (the codec ones are added beside them). */
export const convert: LocalNamespace = {
  /** convert.hexToInt("ff38", signed?) → 65336, or -200 when signed (two's complement over the given bytes). */
  hexToInt: ([hex, signed]) => {
    const bytes = bytesArg(hex, 'hex');
    if (bytes.length === 0 || bytes.length > 6) throw new ScriptArgumentError('hexToInt reads 1 to 6 bytes');
    return signed === true ? bytes.readIntBE(0, bytes.length) : bytes.readUIntBE(0, bytes.length);
  },
  /** convert.intToHex(255, bytes?) → "ff" (or "00ff" with bytes = 2); negatives as two's complement over `bytes`. */
  intToHex: ([value, size]) => {
    if (!Number.isInteger(value)) throw new ScriptArgumentError('intToHex takes an integer');
    const n = value as number;
    const bytes = size === undefined || size === null ? Math.max(1, Math.ceil((Math.abs(n).toString(16).length + (n < 0 ? 1 : 0)) / 2)) : Number(size);
    if (!Number.isInteger(bytes) || bytes < 1 || bytes > 6) throw new ScriptArgumentError('bytes must be 1 to 6');
    const buffer = Buffer.alloc(bytes);
    if (n < 0) buffer.writeIntBE(n, 0, bytes);
    else buffer.writeUIntBE(n, 0, bytes);
    return buffer.toString('hex');
  },
  /** convert.binToStr(hex or bytes) → the UTF-8 text. */
  binToStr: ([value]) => bytesArg(value, 'input').toString('utf8'),
  /** convert.strToBin(text) → hex of its UTF-8 bytes. */
  strToBin: ([value]) => {
    if (typeof value !== 'string') throw new ScriptArgumentError('strToBin takes a string');
    return Buffer.from(value, 'utf8').toString('hex');
  },
  /** convert.imeisvToimei("3520990017614823") → "352099001761481" + Luhn digit: the IMEI of an IMEISV. */
  imeisvToimei: ([value]) => {
    const digits = String(value);
    if (!/^\d{16}$/.test(digits)) throw new ScriptArgumentError('an IMEISV has 16 digits');
    const body = digits.slice(0, 14);
    return `${body}${luhn(body)}`;
  },
  /** convert.flattenObject({a: {b: 1}}, separator = ".") → {"a.b": 1}. */
  flattenObject: ([value, separator]) => flatten(value, typeof separator === 'string' ? separator : '.', '', {}),
  /** convert.delimitedStringToObject("a=1,b=2", ",", "=", {intHex}) → {a: 1, b: 2}. */
  delimitedStringToObject: ([value, delimiter, separator, options]) => delimitedStringToObject(value, delimiter, separator, options),
  /** convert.mccmnc: the older name of network.decodeMccMnc. */
  mccmnc: ([value]) => decodeMccMnc(value),
};
