import { Type, type TOptional, type TString } from 'typebox';
import type { ServiceOptions } from '../domain/services.js';
import { bytesOption, enumOption, optionalIntOption } from './service-options.js';

/**
 * How a device names itself at the front of a message (UDP datagrams, TCP frames): the bytes before a
 * delimiter (`dev-17:…`), or a fixed number of leading bytes (an 8-byte binary id), read as text or hex.
 */
export interface KeyPrefix {
  /** Set unless `length` is: the key ends at the first occurrence. */
  readonly delimiter: Buffer | undefined;
  /** Fixed key length in bytes; wins over the delimiter. */
  readonly length: number | undefined;
  /** `utf8`: the bytes are the key's text; `hex`: the key is their lower-case hex (binary ids). */
  readonly encoding: KeyEncoding;
}

export const KEY_ENCODINGS = ['utf8', 'hex'] as const;
export type KeyEncoding = (typeof KEY_ENCODINGS)[number];

/** Endpoint keys are at most this long (characters); longer candidates name no device. */
export const MAX_KEY_LENGTH = 256;

/** The bytes options (`delimiter`, `keyDelimiter`, `loginReply`) are given as text or, with `Hex` after the name, as hex. */
export function bytesOptionSchemas(name: string, what: string, text?: string): Record<string, TOptional<TString>> {
  return {
    [name]: Type.Optional(Type.String({ minLength: 1, maxLength: 16, ...(text === undefined ? {} : { default: text }), description: `${what}, as text (1 to 16 bytes of UTF-8)` })),
    [`${name}Hex`]: Type.Optional(Type.String({ pattern: '^([0-9a-fA-F]{2}){1,16}$', examples: ['0d0a'], description: `${what}, as hex (1 to 16 bytes); wins over ${name}` })),
  };
}

/** The key prefix options as the API publishes them (GET /services/types). */
export const KEY_PREFIX_OPTION_SCHEMAS = {
  ...bytesOptionSchemas('keyDelimiter', 'prefix rule: the key ends at the first delimiter', ':'),
  keyLength: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_KEY_LENGTH, description: 'prefix rule: the key is the first N bytes instead of ending at the delimiter' })),
  keyEncoding: Type.Optional(Type.Enum([...KEY_ENCODINGS], { default: 'utf8', description: 'the key bytes as text (utf8) or as their lower-case hex (binary ids)' })),
};

/** Options `keyDelimiter` (default `:`) or `keyDelimiterHex`, `keyLength` (bytes) and `keyEncoding` (`utf8` | `hex`). */
export function keyPrefixOption(options: ServiceOptions): KeyPrefix {
  const length = optionalIntOption(options, 'keyLength', 1, MAX_KEY_LENGTH);
  const delimiter = bytesOption(options, 'keyDelimiter', Buffer.from(':')); // checked even when keyLength wins
  return {
    delimiter: length === undefined ? delimiter : undefined,
    length,
    encoding: enumOption(options, 'keyEncoding', KEY_ENCODINGS, 'utf8'),
  };
}

/** Same rule, same result: lets a router read a datagram's key once for every service sharing the rule. */
export function keyPrefixSignature(prefix: KeyPrefix): string {
  return `${prefix.length ?? `d${prefix.delimiter?.toString('hex') ?? ''}`}/${prefix.encoding}`;
}

/** The key at the front of `bytes` and what follows it; undefined when there is no valid key there. */
export function splitKey(bytes: Buffer, prefix: KeyPrefix): { key: string; rest: Buffer } | undefined {
  let end: number;
  let restStart: number;
  if (prefix.length !== undefined) {
    if (bytes.length < prefix.length) return undefined;
    end = restStart = prefix.length;
  } else {
    const delimiter = prefix.delimiter!;
    // A key longer than any endpoint key cannot match: do not scan a large payload for the delimiter.
    const window = bytes.subarray(0, MAX_KEY_LENGTH * 4 + delimiter.length);
    end = window.indexOf(delimiter);
    if (end < 0) return undefined;
    restStart = end + delimiter.length;
  }
  const key = decodeKey(bytes.subarray(0, end), prefix.encoding);
  return key === undefined ? undefined : { key, rest: bytes.subarray(restStart) };
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as an endpoint key (non-empty, no control characters, at most 256 characters), or undefined. */
export function decodeKey(bytes: Uint8Array, encoding: KeyEncoding): string | undefined {
  if (bytes.length === 0) return undefined;
  let key: string;
  if (encoding === 'hex') key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  else {
    try {
      key = utf8.decode(bytes);
    } catch {
      return undefined;
    }
  }
  // eslint-disable-next-line no-control-regex
  if (key.length > MAX_KEY_LENGTH || /[\u0000-\u001f\u007f]/.test(key)) return undefined;
  return key;
}
