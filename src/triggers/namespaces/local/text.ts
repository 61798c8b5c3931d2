import { ScriptArgumentError } from '../namespace.js';

/**
 * "a=1,b=0x1F,c=x" → {a: 1, b: "0x1F", c: "x"}: numbers become numbers; with `{intHex: true}` hex values
 * ("0x1F" or bare hex digits) become integers too.
 */
export function delimitedStringToObject(value: unknown, delimiter: unknown, separator: unknown, options: unknown): Record<string, unknown> {
  if (typeof value !== 'string') throw new ScriptArgumentError('expected a string such as "a=1,b=2"');
  const pairSep = typeof delimiter === 'string' && delimiter !== '' ? delimiter : ',';
  const keySep = typeof separator === 'string' && separator !== '' ? separator : '=';
  const intHex = typeof options === 'object' && options !== null && (options as { intHex?: unknown }).intHex === true;
  const result: Record<string, unknown> = {};
  for (const pair of value.split(pairSep)) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf(keySep);
    const key = (at < 0 ? pair : pair.slice(0, at)).trim();
    const raw = at < 0 ? '' : pair.slice(at + keySep.length).trim();
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') continue;
    if (intHex && /^(0x)?[0-9a-fA-F]+$/.test(raw)) result[key] = parseInt(raw.replace(/^0x/i, ''), 16);
    else if (/^-?\d+(\.\d+)?$/.test(raw)) result[key] = Number(raw);
    else result[key] = raw;
  }
  return result;
}
