import { AppError } from '../errors.js';
import type { PositionEstimate } from './estimate.js';
import type { CellObservation, GeolocationRequest, RadioType } from './geolocation-input.js';
import type { HttpAnswer, HttpJson } from './http-json.js';

/** A service that turns cells, access points and addresses into a position. */
export interface GeolocationProvider {
  /**
   * The position of the device that made these observations; undefined when the provider knows none of them.
   * @throws AppError IOTB_LOCATION_PROVIDER_FAILED when the provider cannot be reached or refuses (bad key, quota)
   */
  locate(request: GeolocationRequest): Promise<PositionEstimate | undefined>;
}

export interface HttpProviderOptions {
  /** The API URL; a bare origin (`https://eu1.unwiredlabs.com`) gets the provider's usual path. */
  readonly url?: string;
  /** The account's key: sent to the provider, never put in an error or a log. */
  readonly apiKey: string;
  readonly http: HttpJson;
  /** Default 10000. */
  readonly timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** The longest error message: a provider's text is repeated in it, cut here. */
const MAX_MESSAGE_CHARS = 300;

/**
 * The Google Maps Geolocation API shape (developers.google.com/maps/documentation/geolocation/requests-geolocation):
 * POST `<url>?key=<apiKey>` with `{ considerIp, radioType, cellTowers, wifiAccessPoints }` → `{ location: { lat, lng },
 * accuracy }`; a 404 with reason `notFound` means no position. Other services speak it too.
 *
 * - The format has one `radioType` per request: the first cell's radio is sent, with the cells of that radio.
 * - NR cells go in `newRadioCellId` (the format rejects `cellId` for NR).
 * - `considerIp` is always false: the provider would locate the address the request comes from, this server.
 *   So a request with only an ip is not sent (undefined).
 *
 * @example await new GoogleStyleGeolocation({ apiKey, http }).locate(parseGeolocationRequest(body))
 */
export class GoogleStyleGeolocation implements GeolocationProvider {
  readonly #url: URL;
  readonly #apiKey: string;
  readonly #http: HttpJson;
  readonly #timeoutMs: number;

  constructor(options: HttpProviderOptions) {
    this.#url = providerUrl(options.url ?? 'https://www.googleapis.com/geolocation/v1/geolocate', '/geolocation/v1/geolocate');
    this.#apiKey = checkedKey(options.apiKey);
    this.#http = options.http;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async locate(request: GeolocationRequest): Promise<PositionEstimate | undefined> {
    if (request.cells.length === 0 && request.wifi.length === 0) return undefined;
    const radio = request.cells[0]?.radioType;
    const body = {
      considerIp: false,
      ...(radio !== undefined && { radioType: radio }),
      cellTowers: request.cells.filter((cell) => cell.radioType === radio).map(googleCell),
      wifiAccessPoints: request.wifi.map((ap) => ({ macAddress: ap.macAddress, ...(ap.signalStrength !== undefined && { signalStrength: ap.signalStrength }), ...(ap.age !== undefined && { age: ap.age }) })),
    };
    const url = new URL(this.#url);
    url.searchParams.set('key', this.#apiKey);
    const answer = await send(this.#http, { method: 'POST', url: url.href, headers: { 'content-type': 'application/json' }, json: body, timeoutMs: this.#timeoutMs }, this.#apiKey, 'google');
    const json = parseJson(answer.text);

    if (answer.status === 200) {
      const location = field(json, 'location');
      const found = position(field(location, 'lat'), field(location, 'lng'), field(json, 'accuracy'));
      if (!found) throw failed('google', answer.status, 'The Google-style geolocation answer has no location.lat, location.lng and accuracy', this.#apiKey);
      return found;
    }
    const error = field(json, 'error');
    const errors = field(error, 'errors');
    const reasons = Array.isArray(errors) ? errors.map((item) => field(item, 'reason')).filter((reason): reason is string => typeof reason === 'string') : [];
    // Only the documented not-found answer means "no position": a bare 404 is a wrong URL.
    if (answer.status === 404 && reasons.includes('notFound')) return undefined;
    const message = field(error, 'message');
    const said = [reasons.join(', '), typeof message === 'string' ? message : ''].filter(Boolean).join(': ');
    throw failed('google', answer.status, `The Google-style geolocation provider answered ${answer.status}${said ? ` (${said})` : ''}`, this.#apiKey);
  }
}

/**
 * The Unwired Labs LocationAPI v2 shape (unwiredlabs.com/api): POST `<url>` (path `/v2/process`) with `{ token,
 * radio, mcc, mnc, cells: [{ lac, cid, radio, mcc, mnc, signal, tA }], wifi: [{ bssid, signal }], address: 0 }`
 * → `{ status: 'ok', lat, lon, accuracy, balance }` or `{ status: 'error', message }`; "No matches found" means no
 * position. The device's ip is sent when the request gives one and does not set considerIp to false.
 *
 * @example await new UnwiredLabsGeolocation({ url: 'https://eu1.unwiredlabs.com', apiKey, http }).locate(request)
 */
export class UnwiredLabsGeolocation implements GeolocationProvider {
  readonly #url: URL;
  readonly #apiKey: string;
  readonly #http: HttpJson;
  readonly #timeoutMs: number;

  constructor(options: HttpProviderOptions) {
    this.#url = providerUrl(options.url ?? 'https://us1.unwiredlabs.com/v2/process', '/v2/process');
    this.#apiKey = checkedKey(options.apiKey);
    this.#http = options.http;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async locate(request: GeolocationRequest): Promise<PositionEstimate | undefined> {
    const ip = request.considerIp === false ? undefined : request.ip;
    if (request.cells.length === 0 && request.wifi.length === 0 && ip === undefined) return undefined;
    const [serving] = request.cells;
    const body = {
      token: this.#apiKey,
      ...(serving && { radio: unwiredRadio(serving.radioType), mcc: serving.mcc, mnc: serving.mnc }),
      ...(request.cells.length > 0 && { cells: request.cells.map(unwiredCell) }),
      ...(request.wifi.length > 0 && { wifi: request.wifi.map((ap) => ({ bssid: ap.macAddress, ...(ap.signalStrength !== undefined && { signal: ap.signalStrength }) })) }),
      ...(ip !== undefined && { ip }),
      address: 0,
    };
    const answer = await send(this.#http, { method: 'POST', url: this.#url.href, headers: { 'content-type': 'application/json' }, json: body, timeoutMs: this.#timeoutMs }, this.#apiKey, 'unwiredlabs');
    const json = parseJson(answer.text);
    const status = field(json, 'status');
    const message = field(json, 'message');

    if (status === 'ok') {
      const found = position(field(json, 'lat'), field(json, 'lon'), field(json, 'accuracy'));
      if (!found) throw failed('unwiredlabs', answer.status, 'The Unwired Labs answer has no lat, lon and accuracy', this.#apiKey);
      return found;
    }
    if (status === 'error' && typeof message === 'string' && /no matches found/i.test(message)) return undefined;
    const said = typeof message === 'string' ? ` (${message})` : '';
    throw failed('unwiredlabs', answer.status, `The Unwired Labs geolocation provider answered ${answer.status}${status === 'error' ? ' with an error' : ' without a status'}${said}`, this.#apiKey);
  }
}

function googleCell(cell: CellObservation): Record<string, number> {
  return {
    // The format's 32-bit cellId cannot hold a 36-bit NR cell identity.
    ...(cell.radioType === 'nr' ? { newRadioCellId: cell.cellId } : { cellId: cell.cellId }),
    locationAreaCode: cell.area,
    mobileCountryCode: cell.mcc,
    mobileNetworkCode: cell.mnc,
    ...(cell.signalStrength !== undefined && { signalStrength: cell.signalStrength }),
    ...(cell.timingAdvance !== undefined && { timingAdvance: cell.timingAdvance }),
    ...(cell.age !== undefined && { age: cell.age }),
  };
}

function unwiredCell(cell: CellObservation): Record<string, number | string> {
  return {
    lac: cell.area,
    cid: cell.cellId,
    radio: unwiredRadio(cell.radioType),
    mcc: cell.mcc,
    mnc: cell.mnc,
    ...(cell.signalStrength !== undefined && { signal: cell.signalStrength }),
    ...(cell.timingAdvance !== undefined && { tA: cell.timingAdvance }),
  };
}

/** Unwired Labs calls WCDMA `umts`. */
function unwiredRadio(radio: RadioType): string {
  return radio === 'wcdma' ? 'umts' : radio;
}

/** Sends, turning a transport failure into IOTB_LOCATION_PROVIDER_FAILED without the key. */
async function send(http: HttpJson, request: Parameters<HttpJson>[0], apiKey: string, provider: string): Promise<HttpAnswer> {
  try {
    return await http(request);
  } catch (error) {
    // A refusal of the address (IOTB_OUTBOUND_ADDRESS_REFUSED) says what the operator must change: kept.
    if (error instanceof AppError) throw error;
    throw failed(provider, undefined, `The ${provider} geolocation provider could not be reached: ${(error as Error).message}`, apiKey);
  }
}

function failed(provider: string, status: number | undefined, message: string, apiKey: string): AppError {
  return new AppError('IOTB_LOCATION_PROVIDER_FAILED', redact(message, apiKey), { provider, ...(status !== undefined && { status }) });
}

/** The message with every form of the key (as is, URL-encoded either way) masked, then cut: a provider may echo the key. */
function redact(message: string, apiKey: string): string {
  let safe = message;
  const queryForm = new URLSearchParams({ key: apiKey }).toString().slice('key='.length);
  for (const form of new Set([apiKey, encodeURIComponent(apiKey), queryForm])) safe = safe.split(form).join('***');
  return safe.length > MAX_MESSAGE_CHARS ? `${safe.slice(0, MAX_MESSAGE_CHARS)}…` : safe;
}

function position(lat: unknown, lon: unknown, accuracy: unknown): PositionEstimate | undefined {
  if (typeof lat !== 'number' || typeof lon !== 'number' || typeof accuracy !== 'number') return undefined;
  if (!(Math.abs(lat) <= 90 && Math.abs(lon) <= 180 && accuracy >= 0 && Number.isFinite(accuracy))) return undefined;
  return { lat, lon, accuracy };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;
}

/** An http(s) URL; a bare origin gets `defaultPath`. The key is never part of it (added per request). */
function providerUrl(text: string, defaultPath: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError('IOTB_REQUEST_VALIDATION', 'url is an absolute http or https URL', { field: 'url' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('IOTB_REQUEST_VALIDATION', 'url is an http or https URL', { field: 'url' });
  if (url.pathname === '/' || url.pathname === '') url.pathname = defaultPath;
  return url;
}

function checkedKey(apiKey: string): string {
  if (typeof apiKey !== 'string' || apiKey.trim() === '') throw new AppError('IOTB_REQUEST_VALIDATION', 'apiKey is required', { field: 'apiKey' });
  return apiKey;
}
