/**
 * Namespace calls answered on the script worker's side (`namespaces/local/`), and where each may run. On the
 * worker's own thread only calls whose cost is known to be small: a call there holds every account's runs on
 * that worker until it returns, and nothing can stop it. The rest go to a call process (call-pool.ts), which
 * is killed when the run's CPU time is up. Measured on the worker's thread before (2 cores):
 * `sql.select` of a recursive CTE without end, forever (the worker was SIGKILLed after the wall time);
 * `json.patchApply` with 22 `copy` operations (827 bytes), 13 s; `convert.cborToObject` of 390 hex digits of
 * shared references (tag 29), 3.3 s; `convert.xmlToObject` of 5.6 MB, 3.3 s.
 */
import { LOCAL_NAMESPACES } from '../namespaces/local/index.js';

/**
 * Functions whose cost is linear in their arguments and whose result is no larger than them (arithmetic,
 * checksums, text splitting): on the worker's thread while their arguments stay under INLINE_MAX_CHARS.
 * Decoders (CBOR, MessagePack: shared references make a small input decode into a huge value), JSON Patch
 * (each `copy` may double the document), parsers of formats and `sql` are never on this list.
 */
const INLINE = new Set([
  'date.now', 'date.format',
  'hash.crc32', 'hash.crc64', 'hash.crc64signed', 'hash.sha256',
  'network.isIpInCidrs', 'network.splitHostPort', 'network.decodeMccMnc',
  'geospatial.geodist', 'geospatial.bearing', 'geospatial.destination',
  'convert.hexToInt', 'convert.intToHex', 'convert.binToStr', 'convert.strToBin', 'convert.imeisvToimei',
  'convert.flattenObject', 'convert.delimitedStringToObject', 'convert.mccmnc',
  'string.delimitedStringToObject',
]);

/**
 * Arguments (JSON characters) past which even those go to a call process. The slowest per character,
 * `hash.crc64` of text (BigInt arithmetic per byte, up to 3 bytes per character), takes ~0.15 µs a byte: 8 KiB
 * of arguments cost a few ms at most. Device payloads are far smaller.
 */
const INLINE_MAX_CHARS = 8 * 1024;

/** The function, when the worker answers `namespace.fn` (itself or in a call process); undefined when the service does. */
function localFunction(namespace: string, fn: string) {
  const functions = Object.hasOwn(LOCAL_NAMESPACES, namespace) ? LOCAL_NAMESPACES[namespace] : undefined;
  return functions && Object.hasOwn(functions, fn) ? functions[fn] : undefined;
}

export function isLocal(namespace: string, fn: string): boolean {
  return localFunction(namespace, fn) !== undefined;
}

/** A local call the worker may answer on its own thread (see INLINE). */
export function runsInline(namespace: string, fn: string, argsJson: string): boolean {
  return argsJson.length <= INLINE_MAX_CHARS && INLINE.has(`${namespace}.${fn}`);
}

/**
 * Answers a local call: the reply text the script side parses, `{"value": …}` or `{"error": "…"}` (`{}` for
 * undefined). Undefined when the function is not a local one.
 */
export function callLocal(namespace: string, fn: string, argsJson: string, accountId: string): string | undefined {
  const local = localFunction(namespace, fn);
  if (!local) return undefined;
  try {
    const value = local(JSON.parse(argsJson) as unknown[], { accountId });
    return value === undefined ? '{}' : JSON.stringify({ value });
  } catch (error) {
    return errorReply(error instanceof Error ? error.message : String(error));
  }
}

export function errorReply(message: string): string {
  return JSON.stringify({ error: message });
}
