import { isIP } from 'node:net';
import { AppError } from '../errors.js';

/** Radio types of a request, as the Google-style geolocation API names them (`umts` is read as `wcdma`). */
export const RADIO_TYPES = ['gsm', 'cdma', 'wcdma', 'lte', 'nr'] as const;
export type RadioType = (typeof RADIO_TYPES)[number];

/** Radio values of the OpenCelliD CSV (`radio` column). */
export const OPENCELLID_RADIOS = ['GSM', 'UMTS', 'CDMA', 'LTE', 'NR'] as const;
export type OpenCellIdRadio = (typeof OPENCELLID_RADIOS)[number];

/** At most this many cells and Wi-Fi access points in one request. */
export const MAX_CELLS = 50;
export const MAX_WIFI = 100;

const UINT32_MAX = 2 ** 32 - 1;
const TIMING_ADVANCE_MAX = 2 ** 16;

/**
 * Largest cell identity: the format's uint32 (GSM and CDMA identities are 16 bits, WCDMA's UC-Id and LTE's ECI 28,
 * but devices mislabel radios and 32 bits is what the Google-style API accepts); NR's NCI is 36 bits (3GPP TS 38.413).
 */
const CELL_ID_MAX = UINT32_MAX;
const NR_CELL_ID_MAX = 2 ** 36 - 1;

export interface CellObservation {
  readonly radioType: RadioType;
  readonly mcc: number;
  /** MNC; for CDMA the System ID (SID). */
  readonly mnc: number;
  /** LAC (GSM, WCDMA), TAC (LTE, NR) or NID (CDMA): sent as `lac`, `tac` or `locationAreaCode`. */
  readonly area: number;
  readonly cellId: number;
  /** dBm. */
  readonly signalStrength?: number;
  readonly timingAdvance?: number;
  /** Milliseconds since the cell was last seen. */
  readonly age?: number;
}

export interface WifiObservation {
  /** Lower-case, colon-separated: `aa:bb:cc:dd:ee:ff`. */
  readonly macAddress: string;
  /** dBm. */
  readonly signalStrength?: number;
  readonly age?: number;
}

export interface GeolocationRequest {
  readonly cells: readonly CellObservation[];
  readonly wifi: readonly WifiObservation[];
  /** An IPv4 or IPv6 literal: the device's address, for providers that locate addresses. */
  readonly ip?: string;
  readonly considerIp?: boolean;
}

/**
 * Reads and checks a geolocation request body. Accepts this API's names (`cells`, `wifi`, `lac`/`tac`, `signal`)
 * and the Google-style ones (`cellTowers` with `mobileCountryCode`, `mobileNetworkCode`, `locationAreaCode`,
 * `newRadioCellId`; `wifiAccessPoints`; a top-level `radioType` for cells that name none). Unknown fields are
 * ignored (Google's `carrier`, `channel` …).
 *
 * @example parseGeolocationRequest({ cells: [{ radioType: 'lte', mcc: 262, mnc: 1, tac: 100, cellId: 12345 }] })
 * @throws AppError IOTB_REQUEST_VALIDATION with `details.field` naming the field as sent (`cellTowers[2].mobileCountryCode`)
 */
export function parseGeolocationRequest(body: unknown): GeolocationRequest {
  if (!isObject(body)) throw invalid('body', 'The body is a JSON object with cells, wifi and/or ip');
  const defaultRadio = body.radioType === undefined ? undefined : radioType(body.radioType, 'radioType');
  const cellList = aliasedArray(body, 'cells', 'cellTowers', MAX_CELLS);
  const wifiList = aliasedArray(body, 'wifi', 'wifiAccessPoints', MAX_WIFI);
  const cells = cellList ? cellList.items.map((item, index) => cell(item, `${cellList.name}[${index}]`, defaultRadio)) : [];
  const wifi = wifiList ? wifiList.items.map((item, index) => accessPoint(item, `${wifiList.name}[${index}]`)) : [];

  let ip: string | undefined;
  if (body.ip !== undefined) {
    if (typeof body.ip !== 'string' || isIP(body.ip) === 0) throw invalid('ip', 'ip is an IPv4 or IPv6 address literal');
    ip = body.ip;
  }
  if (body.considerIp !== undefined && typeof body.considerIp !== 'boolean') throw invalid('considerIp', 'considerIp is true or false');
  if (cells.length === 0 && wifi.length === 0 && ip === undefined) throw invalid('cells', 'Give at least one cell, one Wi-Fi access point or an ip');
  return { cells, wifi, ...(ip !== undefined && { ip }), ...(body.considerIp !== undefined && { considerIp: body.considerIp }) };
}

/** `aa:bb:cc:dd:ee:ff`, `AA-BB-CC-DD-EE-FF` or `aabbccddeeff` → `aa:bb:cc:dd:ee:ff`; undefined when not a MAC address. */
export function normaliseMac(text: string): string | undefined {
  const trimmed = text.trim();
  let hex: string;
  if (/^[0-9a-f]{2}([:-])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i.test(trimmed)) hex = trimmed.replace(/[:-]/g, '');
  else if (/^[0-9a-f]{12}$/i.test(trimmed)) hex = trimmed;
  else return undefined;
  return hex.toLowerCase().replace(/(..)(?!$)/g, '$1:');
}

/** The OpenCelliD radio of either vocabulary, any case: `wcdma`/`umts` → UMTS, `lte` → LTE; undefined when unknown. */
export function openCellIdRadio(radio: string): OpenCellIdRadio | undefined {
  const upper = radio.trim().toUpperCase();
  if (upper === 'WCDMA') return 'UMTS';
  return (OPENCELLID_RADIOS as readonly string[]).includes(upper) ? (upper as OpenCellIdRadio) : undefined;
}

/**
 * The key a cell is stored and looked up by: `LTE:262:1:100:12345`. The radio is written in OpenCelliD's
 * vocabulary (GSM, UMTS, CDMA, LTE, NR), so a request's `wcdma` finds an imported `UMTS` row. `cellId` is the
 * full identity as OpenCelliD stores it: the 28-bit UC-Id for UMTS, the 28-bit ECI for LTE, the NCI for NR.
 * @throws Error when `radio` is neither vocabulary (a programming error: inputs are checked before)
 */
export function cellKey(radio: RadioType | OpenCellIdRadio, mcc: number, mnc: number, area: number, cellId: number): string {
  const name = openCellIdRadio(radio);
  if (!name) throw new Error(`cellKey: unknown radio ${radio}`);
  return `${name}:${mcc}:${mnc}:${area}:${cellId}`;
}

function cell(item: unknown, path: string, defaultRadio: RadioType | undefined): CellObservation {
  if (!isObject(item)) throw invalid(path, `${path} is an object`);
  const radioField = item.radioType === undefined ? undefined : radioType(item.radioType, `${path}.radioType`);
  const radio = radioField ?? defaultRadio;
  if (!radio) throw invalid(`${path}.radioType`, `${path}.radioType is required (gsm, cdma, wcdma, lte or nr), on the cell or at the top level`);

  const mcc = required(item, path, ['mcc', 'mobileCountryCode'], 'the mobile country code', 0, 999);
  // CDMA carries the System ID where the others carry the MNC (0–32767).
  const mnc = required(item, path, ['mnc', 'mobileNetworkCode'], radio === 'cdma' ? 'the MNC (the SID for CDMA)' : 'the mobile network code', 0, radio === 'cdma' ? 32767 : 999);
  const area = required(item, path, ['lac', 'tac', 'locationAreaCode'], 'the location or tracking area code', 0, UINT32_MAX);
  const cellId = required(item, path, ['cellId', 'newRadioCellId'], `the ${radio} cell identity`, 0, radio === 'nr' ? NR_CELL_ID_MAX : CELL_ID_MAX);
  const signalStrength = signal(item, path);
  const timingAdvance = optional(item, path, ['timingAdvance'], 'the timing advance', 0, TIMING_ADVANCE_MAX);
  const age = optional(item, path, ['age'], 'milliseconds since the cell was seen', 0, Number.MAX_SAFE_INTEGER);
  return {
    radioType: radio,
    mcc,
    mnc,
    area,
    cellId,
    ...(signalStrength !== undefined && { signalStrength }),
    ...(timingAdvance !== undefined && { timingAdvance }),
    ...(age !== undefined && { age }),
  };
}

function accessPoint(item: unknown, path: string): WifiObservation {
  if (!isObject(item)) throw invalid(path, `${path} is an object`);
  const macAddress = typeof item.macAddress === 'string' ? normaliseMac(item.macAddress) : undefined;
  if (!macAddress) throw invalid(`${path}.macAddress`, `${path}.macAddress is a MAC address: aa:bb:cc:dd:ee:ff, AA-BB-CC-DD-EE-FF or aabbccddeeff`);
  const signalStrength = signal(item, path);
  const age = optional(item, path, ['age'], 'milliseconds since the access point was seen', 0, Number.MAX_SAFE_INTEGER);
  return { macAddress, ...(signalStrength !== undefined && { signalStrength }), ...(age !== undefined && { age }) };
}

function radioType(value: unknown, field: string): RadioType {
  const lower = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (lower === 'umts') return 'wcdma';
  if (lower !== undefined && (RADIO_TYPES as readonly string[]).includes(lower)) return lower as RadioType;
  throw invalid(field, `${field} is one of gsm, cdma, wcdma (or umts), lte, nr`);
}

/** dBm, −200 to 0; `signalStrength` or its alias `signal`. */
function signal(item: Record<string, unknown>, path: string): number | undefined {
  const found = pick(item, ['signalStrength', 'signal']);
  if (!found) return undefined;
  const [name, value] = found;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < -200 || value > 0) {
    throw invalid(`${path}.${name}`, `${path}.${name} is the signal strength in dBm, from -200 to 0`);
  }
  return value;
}

function required(item: Record<string, unknown>, path: string, names: readonly string[], what: string, min: number, max: number): number {
  const value = optional(item, path, names, what, min, max);
  if (value === undefined) throw invalid(`${path}.${names[0]}`, `${path}.${names[0]} (${what}) is required`);
  return value;
}

/** The first of `names` present: a whole number from `min` to `max`. */
function optional(item: Record<string, unknown>, path: string, names: readonly string[], what: string, min: number, max: number): number | undefined {
  const found = pick(item, names);
  if (!found) return undefined;
  const [name, value] = found;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${path}.${name}`, `${path}.${name} is ${what}: a whole number from ${min} to ${max}`);
  }
  return value;
}

function pick(item: Record<string, unknown>, names: readonly string[]): [string, unknown] | undefined {
  for (const name of names) if (item[name] !== undefined && item[name] !== null) return [name, item[name]];
  return undefined;
}

/** The array under `name` or its alias (not both), at most `max` long. */
function aliasedArray(body: Record<string, unknown>, name: string, alias: string, max: number): { name: string; items: unknown[] } | undefined {
  if (body[name] !== undefined && body[alias] !== undefined) throw invalid(alias, `Give ${name} or ${alias}, not both`);
  const used = body[name] !== undefined ? name : body[alias] !== undefined ? alias : undefined;
  if (used === undefined) return undefined;
  const items = body[used];
  if (!Array.isArray(items)) throw invalid(used, `${used} is an array`);
  if (items.length > max) throw invalid(used, `${used} has at most ${max} entries`);
  return { name: used, items: items as unknown[] };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
