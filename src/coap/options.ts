/**
 * Option numbers, their format rules, and helpers to read and build the options the platform uses
 * (RFC 7252 5.10, RFC 7641 2, RFC 7959 2.1 and 4, RFC 7967).
 */
import type { CoapMessage, CoapOption } from './message.js';

export const OptionNumber = {
  IfMatch: 1,
  UriHost: 3,
  ETag: 4,
  IfNoneMatch: 5,
  Observe: 6,
  UriPort: 7,
  LocationPath: 8,
  UriPath: 11,
  ContentFormat: 12,
  MaxAge: 14,
  UriQuery: 15,
  Accept: 17,
  LocationQuery: 20,
  Block2: 23,
  Block1: 27,
  Size2: 28,
  ProxyUri: 35,
  ProxyScheme: 39,
  Size1: 60,
  NoResponse: 258,
} as const;

/** Value length range and repeatability of an option we recognise (RFC 7252 5.10 table 4 and the extensions). */
interface OptionFormat {
  readonly min: number;
  readonly max: number;
  readonly repeatable: boolean;
}

const FORMATS = new Map<number, OptionFormat>([
  [OptionNumber.IfMatch, { min: 0, max: 8, repeatable: true }],
  [OptionNumber.UriHost, { min: 1, max: 255, repeatable: false }],
  [OptionNumber.ETag, { min: 1, max: 8, repeatable: true }],
  [OptionNumber.IfNoneMatch, { min: 0, max: 0, repeatable: false }],
  [OptionNumber.Observe, { min: 0, max: 3, repeatable: false }],
  [OptionNumber.UriPort, { min: 0, max: 2, repeatable: false }],
  [OptionNumber.LocationPath, { min: 0, max: 255, repeatable: true }],
  [OptionNumber.UriPath, { min: 0, max: 255, repeatable: true }],
  [OptionNumber.ContentFormat, { min: 0, max: 2, repeatable: false }],
  [OptionNumber.MaxAge, { min: 0, max: 4, repeatable: false }],
  [OptionNumber.UriQuery, { min: 0, max: 255, repeatable: true }],
  [OptionNumber.Accept, { min: 0, max: 2, repeatable: false }],
  [OptionNumber.LocationQuery, { min: 0, max: 255, repeatable: true }],
  [OptionNumber.Block2, { min: 0, max: 3, repeatable: false }],
  [OptionNumber.Block1, { min: 0, max: 3, repeatable: false }],
  [OptionNumber.Size2, { min: 0, max: 4, repeatable: false }],
  [OptionNumber.ProxyUri, { min: 1, max: 1034, repeatable: false }],
  [OptionNumber.ProxyScheme, { min: 1, max: 255, repeatable: false }],
  [OptionNumber.Size1, { min: 0, max: 4, repeatable: false }],
  [OptionNumber.NoResponse, { min: 0, max: 1, repeatable: false }],
]);

/** RFC 7252 5.4.1: odd option numbers are critical. */
export const isCritical = (number: number): boolean => (number & 1) === 1;

export type OptionCheck =
  | { readonly ok: true; readonly options: readonly CoapOption[] }
  /** A critical option that is unknown, out of format or repeated: the request gets 4.02 Bad Option. */
  | { readonly ok: false; readonly badOption: number };

/**
 * Applies RFC 7252 5.4.1, 5.4.3 and 5.4.5 to a received message's options: an unrecognised critical option,
 * a critical option whose length is out of range, or a repeated non-repeatable critical option makes the
 * message unprocessable; the same faults in elective options just drop that occurrence. Returns the
 * same array when nothing is dropped.
 */
export function checkOptions(options: readonly CoapOption[]): OptionCheck {
  let kept: CoapOption[] | undefined;
  let previous = -1;
  for (let i = 0; i < options.length; i++) {
    const option = options[i]!;
    const format = FORMATS.get(option.number);
    const repeated = option.number === previous;
    previous = option.number;
    if (format === undefined) {
      // Unknown elective options pass untouched: the application may know them.
      if (isCritical(option.number)) return { ok: false, badOption: option.number };
    } else if (option.value.length < format.min || option.value.length > format.max || (repeated && !format.repeatable)) {
      if (isCritical(option.number)) return { ok: false, badOption: option.number };
      kept ??= options.slice(0, i);
      continue;
    }
    kept?.push(option);
  }
  return { ok: true, options: kept ?? options };
}

const EMPTY: Buffer = Buffer.alloc(0);

/** The minimal big-endian encoding of an unsigned integer option value (RFC 7252 3.2: 0 is zero bytes). */
export function encodeUint(value: number): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new RangeError(`not a uint32: ${value}`);
  if (value === 0) return EMPTY;
  const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : value < 0x1000000 ? 3 : 4;
  const out = Buffer.allocUnsafe(bytes);
  out.writeUIntBE(value, 0, bytes);
  return out;
}

/** Reads an unsigned integer option value of up to 4 bytes (leading zero bytes are allowed on receipt). */
export function decodeUint(value: Buffer): number {
  if (value.length > 4) throw new RangeError('uint option longer than 4 bytes');
  let n = 0;
  for (const byte of value) n = n * 256 + byte;
  return n;
}

/** An option from a number and a value: strings are UTF-8, numbers minimal uints. */
export function option(number: number, value: Buffer | string | number): CoapOption {
  return {
    number,
    value: typeof value === 'number' ? encodeUint(value) : typeof value === 'string' ? Buffer.from(value, 'utf8') : value,
  };
}

/** The first value of an option, or undefined when absent. */
export function optionValue(message: Pick<CoapMessage, 'options'>, number: number): Buffer | undefined {
  for (const o of message.options) if (o.number === number) return o.value;
  return undefined;
}

/** Every value of a (repeatable) option, in order. */
export function optionValues(message: Pick<CoapMessage, 'options'>, number: number): Buffer[] {
  const out: Buffer[] = [];
  for (const o of message.options) if (o.number === number) out.push(o.value);
  return out;
}

function uintOption(message: Pick<CoapMessage, 'options'>, number: number): number | undefined {
  const value = optionValue(message, number);
  return value === undefined ? undefined : decodeUint(value);
}

/** The options without any occurrence of the given numbers. */
export function withoutOptions(options: readonly CoapOption[], ...numbers: number[]): CoapOption[] {
  return options.filter((o) => !numbers.includes(o.number));
}

/** The options with every occurrence of `number` replaced by one option (or removed when value is undefined). */
export function withOption(options: readonly CoapOption[], number: number, value: Buffer | string | number | undefined): CoapOption[] {
  const out = withoutOptions(options, number);
  if (value !== undefined) out.push(option(number, value));
  return out;
}

/** The Uri-Path segments joined as `/a/b` (`/` when there are none). Segments are raw, not percent-decoded. */
export function uriPath(message: Pick<CoapMessage, 'options'>): string {
  let path = '';
  for (const o of message.options) if (o.number === OptionNumber.UriPath) path += '/' + o.value.toString('utf8');
  return path === '' ? '/' : path;
}

/** Uri-Path options for `/a/b` (leading, trailing and doubled slashes make no empty segments). */
export function uriPathOptions(path: string): CoapOption[] {
  return path
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => option(OptionNumber.UriPath, segment));
}

/** The Uri-Query arguments, e.g. `['ep=dev1', 'lt=300']`. */
export function uriQuery(message: Pick<CoapMessage, 'options'>): string[] {
  return optionValues(message, OptionNumber.UriQuery).map((v) => v.toString('utf8'));
}

/** Uri-Query options from `key=value` strings or a record. */
export function uriQueryOptions(query: readonly string[] | Readonly<Record<string, string | number>>): CoapOption[] {
  const args = Array.isArray(query) ? (query as readonly string[]) : Object.entries(query).map(([k, v]) => `${k}=${v}`);
  return args.map((arg) => option(OptionNumber.UriQuery, arg));
}

/** The Location-Path segments of a 2.01 Created (RFC 7252 5.10.7). */
export function locationPath(message: Pick<CoapMessage, 'options'>): string[] {
  return optionValues(message, OptionNumber.LocationPath).map((v) => v.toString('utf8'));
}

export const contentFormat = (message: Pick<CoapMessage, 'options'>): number | undefined => uintOption(message, OptionNumber.ContentFormat);
export const accept = (message: Pick<CoapMessage, 'options'>): number | undefined => uintOption(message, OptionNumber.Accept);
/** The Observe value: 0 register / 1 deregister in a request, the sequence number in a notification (RFC 7641 2). */
export const observe = (message: Pick<CoapMessage, 'options'>): number | undefined => uintOption(message, OptionNumber.Observe);
/** Max-Age in seconds; 60 when absent (RFC 7252 5.10.5). */
export const maxAge = (message: Pick<CoapMessage, 'options'>): number => uintOption(message, OptionNumber.MaxAge) ?? 60;
export const size1 = (message: Pick<CoapMessage, 'options'>): number | undefined => uintOption(message, OptionNumber.Size1);
export const size2 = (message: Pick<CoapMessage, 'options'>): number | undefined => uintOption(message, OptionNumber.Size2);
export const etag = (message: Pick<CoapMessage, 'options'>): Buffer | undefined => optionValue(message, OptionNumber.ETag);
