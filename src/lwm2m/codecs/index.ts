/**
 * The LwM2M content-format codecs behind one entry point: `encode` / `decode` by CoAP Content-Format number,
 * plus the short names the HTTP API accepts (`"format": "tlv"`). Every codec is pure; every problem with a
 * payload or a record list is a `CodecError`. See docs/lwm2m-codecs.md for what each format supports.
 */
import { CONTENT_FORMATS, type Lwm2mRecord } from '../model.js';
import { CodecError, type FormatName } from './errors.js';
import { formatLinks, parseLinks } from './link-format.js';
import { decodeLwm2mCbor, encodeLwm2mCbor } from './lwm2m-cbor.js';
import { decodeLwm2mJson, encodeLwm2mJson } from './lwm2m-json.js';
import { decodeOpaque, encodeOpaque } from './opaque.js';
import { decodeRawCbor, encodeRawCbor } from './raw-cbor.js';
import { decodeSenmlCbor, decodeSenmlCborPaths, encodeSenmlCbor, encodeSenmlCborPaths } from './senml-cbor.js';
import { decodeSenmlJson, decodeSenmlJsonPaths, encodeSenmlJson, encodeSenmlJsonPaths } from './senml-json.js';
import { decodeText, encodeText } from './text.js';
import { decodeTlv, encodeTlv } from './tlv.js';
import { encodeUtf8, type CodecOptions } from './values.js';

export { CodecError, type FormatName } from './errors.js';
export { formatLinks, linkAttribute, parseLinks, type CoreLink, type LinkAttribute } from './link-format.js';
export { parseSenmlCbor, serializeSenmlCbor } from './senml-cbor.js';
export { parseSenmlJson, serializeSenmlJson } from './senml-json.js';
export { resolveSenml, type SenmlRecord } from './senml.js';
export { parseTlv, serializeTlv, type Tlv, type TlvKind } from './tlv.js';
export type { CodecOptions } from './values.js';

interface Codec {
  readonly encode: (records: readonly Lwm2mRecord[], options?: CodecOptions) => Uint8Array;
  readonly decode: (payload: Uint8Array, options?: CodecOptions) => Lwm2mRecord[];
  readonly encodePaths?: (paths: readonly string[]) => Uint8Array;
  readonly decodePaths?: (payload: Uint8Array) => string[];
}

const linkCodec: Codec = {
  encode: () => {
    throw new CodecError('link', 'link format carries links, not resource values: use formatLinks()');
  },
  decode: () => {
    throw new CodecError('link', 'link format carries links, not resource values: use parseLinks()');
  },
};

const CODECS: Record<FormatName, Codec> = {
  text: { encode: encodeText, decode: decodeText },
  link: linkCodec,
  opaque: { encode: encodeOpaque, decode: decodeOpaque },
  'raw-cbor': { encode: encodeRawCbor, decode: decodeRawCbor },
  'senml-json': { encode: encodeSenmlJson, decode: decodeSenmlJson, encodePaths: encodeSenmlJsonPaths, decodePaths: decodeSenmlJsonPaths },
  'senml-cbor': { encode: encodeSenmlCbor, decode: decodeSenmlCbor, encodePaths: encodeSenmlCborPaths, decodePaths: decodeSenmlCborPaths },
  tlv: { encode: encodeTlv, decode: decodeTlv },
  json: { encode: encodeLwm2mJson, decode: decodeLwm2mJson },
  cbor: { encode: encodeLwm2mCbor, decode: decodeLwm2mCbor },
};

const NAMES = new Map<number, FormatName>([
  [CONTENT_FORMATS.text, 'text'],
  [CONTENT_FORMATS.linkFormat, 'link'],
  [CONTENT_FORMATS.opaque, 'opaque'],
  [CONTENT_FORMATS.cbor, 'raw-cbor'],
  [CONTENT_FORMATS.senmlJson, 'senml-json'],
  [CONTENT_FORMATS.senmlCbor, 'senml-cbor'],
  [CONTENT_FORMATS.tlv, 'tlv'],
  [CONTENT_FORMATS.oldTlv, 'tlv'],
  [CONTENT_FORMATS.lwm2mJson, 'json'],
  [CONTENT_FORMATS.oldJson, 'json'],
  [CONTENT_FORMATS.lwm2mCbor, 'cbor'],
]);

const NUMBERS: Record<FormatName, number> = {
  text: CONTENT_FORMATS.text,
  link: CONTENT_FORMATS.linkFormat,
  opaque: CONTENT_FORMATS.opaque,
  'raw-cbor': CONTENT_FORMATS.cbor,
  'senml-json': CONTENT_FORMATS.senmlJson,
  'senml-cbor': CONTENT_FORMATS.senmlCbor,
  tlv: CONTENT_FORMATS.tlv,
  json: CONTENT_FORMATS.lwm2mJson,
  cbor: CONTENT_FORMATS.lwm2mCbor,
};

/**
 * The short name of a Content-Format number; the pre-registration 1542 / 1543 are `tlv` / `json`.
 * @returns undefined for a number no codec handles
 * @example formatName(11542) → 'tlv'; formatName(1543) → 'json'; formatName(50) → undefined
 */
export function formatName(contentFormat: number): FormatName | undefined {
  return NAMES.get(contentFormat);
}

/**
 * The (registered) Content-Format number of a short name.
 * @returns undefined for an unknown name
 * @example formatByName('senml-cbor') → 112; formatByName('cbor') → 11544 (LwM2M CBOR); formatByName('raw-cbor') → 60
 */
export function formatByName(name: string): number | undefined {
  return Object.hasOwn(NUMBERS, name) ? NUMBERS[name as FormatName] : undefined;
}

function codec(contentFormat: number): Codec {
  const name = formatName(contentFormat);
  if (name === undefined) throw new CodecError(undefined, `Content-Format ${contentFormat} is not an LwM2M format this server handles`);
  return CODECS[name];
}

/**
 * Encodes records (resource and resource-instance values with absolute paths) in a Content-Format, relative
 * to `options.basePath` (the request path; default `/`). Single-value formats (text, opaque, plain CBOR)
 * need a resource or resource-instance path and exactly the record at it.
 * @example encode(11542, [{ path: '/3/0/9', type: 'integer', value: 100 }], { basePath: '/3/0' }) → c1 09 64
 * @throws CodecError for an unknown format, a record outside the base path, or a value that does not fit its type
 */
export function encode(contentFormat: number, records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  return codec(contentFormat).encode(records, options);
}

/**
 * Decodes a payload of a Content-Format into records with absolute paths. `options.basePath` is the request
 * path (TLV ids are relative to it; every format checks the values lie inside it), `options.models` types
 * the values (unknown resources keep what the format says: TLV bytes stay opaque, SenML `vs` a string …).
 * @example decode(0, utf8('100'), { basePath: '/3/0/9', models }) → [{ path: '/3/0/9', type: 'integer', value: 100 }]
 * @throws CodecError for anything malformed; never another exception
 */
export function decode(contentFormat: number, payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  return codec(contentFormat).decode(payload, options);
}

/**
 * The body of a Read-Composite / Observe-Composite request: a list of paths (SenML JSON or SenML CBOR).
 * @example encodePaths(110, ['/3/0/9', '/1/0/1']) → [{"n":"/3/0/9"},{"n":"/1/0/1"}]
 */
export function encodePaths(contentFormat: number, paths: readonly string[]): Uint8Array {
  const { encodePaths: encodeList } = codec(contentFormat);
  if (encodeList === undefined) throw new CodecError(formatName(contentFormat), 'cannot carry a list of paths (only SenML JSON and SenML CBOR do)');
  return encodeList(paths);
}

/** The paths of a Read-Composite / Observe-Composite request body. */
export function decodePaths(contentFormat: number, payload: Uint8Array): string[] {
  const { decodePaths: decodeList } = codec(contentFormat);
  if (decodeList === undefined) throw new CodecError(formatName(contentFormat), 'cannot carry a list of paths (only SenML JSON and SenML CBOR do)');
  return decodeList(payload);
}

/** Links of a link-format payload (Register, Update, Discover); re-exported beside the value codecs. */
export const decodeLinks = parseLinks;
export const encodeLinks = (links: Parameters<typeof formatLinks>[0]): Uint8Array => encodeUtf8(formatLinks(links));
