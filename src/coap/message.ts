/**
 * The CoAP message (RFC 7252 3) and its wire codec, our own rather than `coap-packet`'s (which the unit tests
 * use as a cross-check), for two measured reasons (docs/coap.md):
 * - decoding must be strict: `coap-packet.parse` accepts datagrams RFC 7252 calls format errors (token
 *   lengths 9–15, options running past the end, a payload marker with no payload);
 * - `coap-packet.generate` costs ~1.4 µs per small response (it decodes every payload to a string to test it
 *   for emptiness, splits the code string, allocates per option), more than the rest of our request path;
 *   this encoder takes ~0.2 µs.
 */

export type MessageType = 'CON' | 'NON' | 'ACK' | 'RST';

type Digit = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | '8' | '9';
/** A code as RFC 7252 writes it, `c.dd`: "0.01" is GET, "2.05" Content, "0.00" the Empty message. */
export type CoapCode = `${'0' | '1' | '2' | '3' | '4' | '5' | '6' | '7'}.${'0' | '1' | '2' | '3'}${Digit}`;

/** One option: its number (RFC 7252 5.10 and the IANA registry) and its raw value. */
export interface CoapOption {
  readonly number: number;
  readonly value: Buffer;
}

export interface CoapMessage {
  readonly type: MessageType;
  readonly code: CoapCode;
  readonly messageId: number;
  /** 0 to 8 bytes (RFC 7252 3). */
  readonly token: Buffer;
  /** In ascending option number; repeated options keep their order. */
  readonly options: readonly CoapOption[];
  readonly payload: Buffer;
}

/** Request methods (RFC 7252 12.1.1, RFC 8132). */
export const Method = {
  GET: '0.01',
  POST: '0.02',
  PUT: '0.03',
  DELETE: '0.04',
  FETCH: '0.05',
  PATCH: '0.06',
  IPATCH: '0.07',
} as const satisfies Record<string, CoapCode>;

/** Response codes (RFC 7252 12.1.2, RFC 7959 2.9, RFC 8516). */
export const ResponseCode = {
  Created: '2.01',
  Deleted: '2.02',
  Valid: '2.03',
  Changed: '2.04',
  Content: '2.05',
  Continue: '2.31',
  BadRequest: '4.00',
  Unauthorized: '4.01',
  BadOption: '4.02',
  Forbidden: '4.03',
  NotFound: '4.04',
  MethodNotAllowed: '4.05',
  NotAcceptable: '4.06',
  RequestEntityIncomplete: '4.08',
  Conflict: '4.09',
  PreconditionFailed: '4.12',
  RequestEntityTooLarge: '4.13',
  UnsupportedContentFormat: '4.15',
  UnprocessableEntity: '4.22',
  TooManyRequests: '4.29',
  InternalServerError: '5.00',
  NotImplemented: '5.01',
  BadGateway: '5.02',
  ServiceUnavailable: '5.03',
  GatewayTimeout: '5.04',
  ProxyingNotSupported: '5.05',
} as const satisfies Record<string, CoapCode>;

export const EMPTY_CODE: CoapCode = '0.00';

const EMPTY: Buffer = Buffer.alloc(0);
const TYPES: readonly MessageType[] = ['CON', 'NON', 'ACK', 'RST'];
const TYPE_BITS: Readonly<Record<MessageType, number>> = { CON: 0, NON: 1, ACK: 2, RST: 3 };

/** The code class: 0 request/empty, 2 success, 4 client error, 5 server error; 1, 6 and 7 are reserved. */
export const codeClass = (code: CoapCode): number => code.charCodeAt(0) - 48;
export const isRequestCode = (code: CoapCode): boolean => code !== EMPTY_CODE && code.charCodeAt(0) === 48;
export const isResponseCode = (code: CoapCode): boolean => {
  const c = codeClass(code);
  return c >= 2 && c <= 5;
};
export const isSuccess = (code: CoapCode): boolean => code.charCodeAt(0) === 50;

/** `c.dd` for a code byte (3-bit class, 5-bit detail). */
export function codeOf(byte: number): CoapCode {
  const detail = byte & 0x1f;
  return `${byte >> 5}.${detail < 10 ? '0' : ''}${detail}` as CoapCode;
}

/** The code byte of `c.dd`. */
export function codeByte(code: CoapCode): number {
  return (codeClass(code) << 5) | ((code.charCodeAt(2) - 48) * 10 + (code.charCodeAt(3) - 48));
}

/** A datagram that is not a well-formed CoAP message (RFC 7252 3, 4.2: "message format error"). */
export class CoapFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CoapFormatError';
  }
}

const CODES: readonly CoapCode[] = Array.from({ length: 256 }, (_, byte) => codeOf(byte));

/**
 * Decodes one datagram. Throws CoapFormatError for anything RFC 7252 3 calls a format error: a header
 * shorter than 4 bytes, version other than 1, token length 9–15, an Empty message (0.00) with anything after
 * the header, option delta or length nibble 15 outside the payload marker, options or extended fields
 * running past the end, option numbers over 65535, a payload marker followed by nothing.
 */
export function decodeMessage(datagram: Buffer): CoapMessage {
  const length = datagram.length;
  if (length < 4) throw new CoapFormatError('truncated header');
  const first = datagram[0]!;
  if (first >> 6 !== 1) throw new CoapFormatError('unsupported version');
  const tokenLength = first & 0x0f;
  if (tokenLength > 8) throw new CoapFormatError('reserved token length');
  const code = CODES[datagram[1]!]!;
  const type = TYPES[(first >> 4) & 0x03]!;
  const messageId = (datagram[2]! << 8) | datagram[3]!;
  if (code === EMPTY_CODE) {
    // RFC 7252 4.1: an Empty message has no token, options or payload.
    if (length !== 4) throw new CoapFormatError('empty message with content');
    return { type, code, messageId, token: EMPTY, options: [], payload: EMPTY };
  }
  let pos = 4 + tokenLength;
  if (pos > length) throw new CoapFormatError('truncated token');
  const token = datagram.subarray(4, pos);
  const options: CoapOption[] = [];
  let number = 0;
  let payload: Buffer = EMPTY;
  while (pos < length) {
    const byte = datagram[pos++]!;
    if (byte === 0xff) {
      if (pos === length) throw new CoapFormatError('payload marker without payload');
      payload = datagram.subarray(pos);
      break;
    }
    let delta = byte >> 4;
    let size = byte & 0x0f;
    if (delta === 15 || size === 15) throw new CoapFormatError('reserved option nibble');
    if (delta === 13) {
      if (pos + 1 > length) throw new CoapFormatError('truncated option delta');
      delta = datagram[pos++]! + 13;
    } else if (delta === 14) {
      if (pos + 2 > length) throw new CoapFormatError('truncated option delta');
      delta = ((datagram[pos]! << 8) | datagram[pos + 1]!) + 269;
      pos += 2;
    }
    if (size === 13) {
      if (pos + 1 > length) throw new CoapFormatError('truncated option length');
      size = datagram[pos++]! + 13;
    } else if (size === 14) {
      if (pos + 2 > length) throw new CoapFormatError('truncated option length');
      size = ((datagram[pos]! << 8) | datagram[pos + 1]!) + 269;
      pos += 2;
    }
    number += delta;
    if (number > 0xffff) throw new CoapFormatError('option number out of range');
    if (pos + size > length) throw new CoapFormatError('truncated option value');
    options.push({ number, value: datagram.subarray(pos, pos + size) });
    pos += size;
  }
  return { type, code, messageId, token, options, payload };
}

/**
 * Encodes a message. Options go out sorted by number (a stable sort keeps repeated options in order).
 * Throws RangeError for a token over 8 bytes, an option number or value length out of range, or a datagram
 * over `maxSize` bytes (default 65507, the UDP maximum). An Empty message (0.00) is the 4-byte header only.
 */
export function encodeMessage(message: CoapMessage, maxSize = 65507): Buffer {
  const { token, payload } = message;
  const first = 0x40 | (TYPE_BITS[message.type] << 4);
  if (message.code === EMPTY_CODE) {
    const out = Buffer.allocUnsafe(4);
    out[0] = first;
    out[1] = 0;
    out[2] = message.messageId >> 8;
    out[3] = message.messageId & 0xff;
    return out;
  }
  if (token.length > 8) throw new RangeError('token longer than 8 bytes');
  const options = sortedOptions(message.options);
  const size = encodedSize(token.length, options, payload.length);
  if (size > maxSize) throw new RangeError(`message of ${size} bytes over the maximum of ${maxSize}`);
  const out = Buffer.allocUnsafe(size);
  out[0] = first | token.length;
  out[1] = codeByte(message.code);
  out[2] = (message.messageId >> 8) & 0xff;
  out[3] = message.messageId & 0xff;
  let pos = 4;
  if (token.length > 0) pos += token.copy(out, pos);
  let previous = 0;
  for (const o of options) {
    const delta = o.number - previous;
    const length = o.value.length;
    if (o.number > 0xffff) throw new RangeError(`option number ${o.number} out of range`);
    if (length > 0xffff + 269) throw new RangeError(`option ${o.number} value too long`);
    previous = o.number;
    const header = pos++;
    out[header] = (nibble(delta) << 4) | nibble(length);
    pos = writeExtended(out, pos, delta);
    pos = writeExtended(out, pos, length);
    if (length > 0) pos += o.value.copy(out, pos);
  }
  if (payload.length > 0) {
    out[pos++] = 0xff;
    payload.copy(out, pos);
  }
  return out;
}

/** RFC 7252 3.1: 0–12 as is, 13 and 14 announce one or two extended bytes. */
const nibble = (n: number): number => (n < 13 ? n : n < 269 ? 13 : 14);

function writeExtended(out: Buffer, pos: number, n: number): number {
  if (n < 13) return pos;
  if (n < 269) {
    out[pos] = n - 13;
    return pos + 1;
  }
  out[pos] = (n - 269) >> 8;
  out[pos + 1] = (n - 269) & 0xff;
  return pos + 2;
}

function sortedOptions(options: readonly CoapOption[]): readonly CoapOption[] {
  for (let i = 1; i < options.length; i++) {
    if (options[i]!.number < options[i - 1]!.number) return [...options].sort((a, b) => a.number - b.number);
  }
  return options;
}

/** An Empty message: ACK or RST for `messageId`, or a CON "ping" (RFC 7252 4.1, 4.3). */
export function emptyMessage(type: MessageType, messageId: number): CoapMessage {
  return { type, code: EMPTY_CODE, messageId, token: EMPTY, options: [], payload: EMPTY };
}

/** Human-readable one-liner for logs: `CON 0.01 mid=1234 token=ab01 /a/b`. */
export function describeMessage(message: CoapMessage): string {
  const path = message.options
    .filter((o) => o.number === 11)
    .map((o) => o.value.toString('utf8'))
    .join('/');
  return `${message.type} ${message.code} mid=${message.messageId} token=${message.token.toString('hex')}${path ? ` /${path}` : ''}`;
}

function extendedBytes(n: number): number {
  return n < 13 ? 0 : n < 269 ? 1 : 2;
}

/** The exact size of a message with this token length, these options (any order) and this payload length. */
export function encodedSize(tokenLength: number, options: readonly CoapOption[], payloadLength: number): number {
  let size = 4 + tokenLength + (payloadLength > 0 ? 1 + payloadLength : 0);
  let sorted = true;
  for (let i = 1; i < options.length; i++) {
    if (options[i]!.number < options[i - 1]!.number) {
      sorted = false;
      break;
    }
  }
  const ordered = sorted ? options : [...options].sort((a, b) => a.number - b.number);
  let previous = 0;
  for (const o of ordered) {
    const delta = o.number - previous;
    previous = o.number;
    size += 1 + extendedBytes(delta) + extendedBytes(o.value.length) + o.value.length;
  }
  return size;
}
