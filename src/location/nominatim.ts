import { distance } from 'geokdbush';
import { AppError } from '../errors.js';
import { checkCoordinates, checkCountry, checkLimit, checkQuery } from './geocode-input.js';
import type { HttpJson } from './http-json.js';

/** Nominatim answers at most 40 results to one search (its documented cap of `limit`). */
const NOMINATIM_MAX_LIMIT = 40;
const DEFAULT_TIMEOUT_MS = 10_000;
/** The most of a provider's own error text repeated in our message. */
const PROVIDER_TEXT_MAX = 200;

export interface NominatimGeocoderOptions {
  /** Where the API lives: `https://nominatim.openstreetmap.org`, `https://eu1.locationiq.com/v1`… (no query string). */
  readonly baseUrl: string;
  readonly http: HttpJson;
  /** Sent as the `key` query parameter (LocationIQ and other hosted Nominatims); never logged nor put in an error. */
  readonly apiKey?: string | undefined;
  /** Nominatim's usage policy asks every client to identify itself. */
  readonly userAgent: string;
  /** Default 10,000 ms. */
  readonly timeoutMs?: number | undefined;
}

/** A geocoding answer of a Nominatim-compatible API, shaped like the embedded index's Place where it can be. */
export interface NominatimPlace {
  /** The place's own name; for an unnamed object (a house) the first part of displayName. */
  readonly name: string;
  /** ISO 3166-1 alpha-2, upper case; undefined when the answer names none (the open sea). */
  readonly country: string | undefined;
  /** Degrees, WGS 84. */
  readonly lat: number;
  readonly lon: number;
  /** The whole address in one line: `Berlin, Deutschland`. */
  readonly displayName: string;
  /** Nominatim's address parts: `road`, `city`, `postcode`, `country`, `country_code`… */
  readonly address: Readonly<Record<string, string>>;
  /** OSM main tag: category `place` and type `city`, category `highway` and type `residential`… */
  readonly category: string | undefined;
  readonly type: string | undefined;
  /** Nominatim's estimate of how prominent the place is, 0 to 1. */
  readonly importance: number | undefined;
  readonly osmType: string | undefined;
  readonly osmId: number | undefined;
  /** The data licence text the provider asks to show with its answers (ODbL for OpenStreetMap). */
  readonly licence: string | undefined;
  readonly source: 'nominatim';
}

/** A reverse-geocoding answer, with its great-circle `distance` from the point asked about, in metres. */
export type NominatimNearbyPlace = NominatimPlace & { readonly distance: number };

/** What a search found nothing for: LocationIQ says so with 404 `{"error":"Unable to geocode"}`. */
const NOTHING_FOUND = Symbol('nothing found');

/**
 * A client of a Nominatim-compatible geocoding API (OpenStreetMap's Nominatim, a self-hosted one, LocationIQ…):
 * `/search` and `/reverse` in the `jsonv2` format with address details, for street-level answers the embedded
 * index does not have. A failed call throws `IOTB_LOCATION_PROVIDER_FAILED`; `IOTB_OUTBOUND_ADDRESS_REFUSED`
 * from the HTTP client passes through.
 */
export class NominatimGeocoder {
  readonly #base: URL;
  readonly #http: HttpJson;
  readonly #apiKey: string | undefined;
  readonly #userAgent: string;
  readonly #timeoutMs: number;

  /** Throws `IOTB_REQUEST_VALIDATION` for a base URL that is not http(s) or carries a query, credentials or fragment, an empty user agent, a timeout that is not a positive integer. */
  constructor(options: NominatimGeocoderOptions) {
    this.#base = checkBaseUrl(options.baseUrl);
    if (typeof options.userAgent !== 'string' || options.userAgent.trim() === '') {
      throw invalid('userAgent', 'The userAgent must name this client (Nominatim usage policy)');
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw invalid('timeoutMs', 'The timeoutMs must be a positive integer');
    this.#http = options.http;
    this.#apiKey = options.apiKey || undefined;
    this.#userAgent = options.userAgent;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Places matching a free-form `query`, best first as the provider ranks them. `country` (ISO 3166-1 alpha-2)
   * restricts the search; `limit` 1 to 100, default 10, of which Nominatim answers at most 40. Inputs are checked
   * as the embedded index checks them.
   * @example await geocoder.forward('Unter den Linden 1, Berlin', { country: 'DE', limit: 1 })
   */
  async forward(query: string, options: { readonly country?: string | undefined; readonly limit?: number | undefined } = {}): Promise<NominatimPlace[]> {
    const q = checkQuery(query);
    const country = checkCountry(options.country);
    const limit = checkLimit(options.limit, 10);
    const params: Record<string, string> = { q, format: 'jsonv2', addressdetails: '1', limit: String(Math.min(limit, NOMINATIM_MAX_LIMIT)) };
    if (country !== undefined) params.countrycodes = country.toLowerCase();
    const { body, status } = await this.#get('search', params);
    if (body === NOTHING_FOUND) return [];
    if (!Array.isArray(body)) throw this.#failed('answered a search with something other than a list', { status });
    return body.slice(0, limit).map((item) => this.#readPlace(item, status));
  }

  /**
   * The object at or nearest to (lat, lon) — a building, a road, a town — or undefined where the provider knows
   * nothing (the open sea).
   * @example await geocoder.reverse(48.8584, 2.2945) // { name: 'Tour Eiffel', displayName: 'Tour Eiffel, 5, Avenue Anatole France, …', distance: 12, … }
   */
  async reverse(lat: number, lon: number): Promise<NominatimNearbyPlace | undefined> {
    checkCoordinates(lat, lon);
    const { body, status } = await this.#get('reverse', { lat: String(lat), lon: String(lon), format: 'jsonv2', addressdetails: '1' });
    // Nominatim answers 200 {"error":"Unable to geocode"} where it finds nothing.
    if (body === NOTHING_FOUND || (isRecord(body) && body.error !== undefined && body.lat === undefined)) return undefined;
    const place = this.#readPlace(body, status);
    return { ...place, distance: Math.round(distance(lon, lat, place.lon, place.lat) * 1000) };
  }

  async #get(path: 'search' | 'reverse', params: Record<string, string>): Promise<{ body: unknown; status: number }> {
    const url = new URL(path, this.#base);
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
    if (this.#apiKey !== undefined) url.searchParams.set('key', this.#apiKey);
    let answer;
    try {
      answer = await this.#http({ method: 'GET', url: url.href, headers: { accept: 'application/json', 'user-agent': this.#userAgent }, timeoutMs: this.#timeoutMs });
    } catch (error) {
      if (error instanceof AppError) throw error;
      // The URL carries the key: only the reason is repeated, and it is cleaned of the key all the same.
      const reason = this.#redact(error instanceof Error ? error.message : String(error));
      throw this.#failed(`did not answer (${reason})`, { reason });
    }
    const { status, text } = answer;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (status < 200 || status > 299) throw this.#failed(`answered HTTP ${status}`, { status });
      throw this.#failed('answered with something other than JSON', { status });
    }
    const providerError = this.#providerError(body);
    if (status === 404 && providerError === 'Unable to geocode') return { body: NOTHING_FOUND, status };
    if (status < 200 || status > 299) throw this.#failed(`answered HTTP ${status}${providerError ? `: ${providerError}` : ''}`, { status });
    return { body, status };
  }

  /** One jsonv2 result; throws IOTB_LOCATION_PROVIDER_FAILED when it is not one (the URL names another kind of API). */
  #readPlace(item: unknown, status: number): NominatimPlace {
    if (!isRecord(item)) throw this.#failed('answered in a shape other than Nominatim jsonv2', { status });
    const lat = Number(item.lat);
    const lon = Number(item.lon);
    if (typeof item.lat !== 'string' || typeof item.lon !== 'string' || !(Math.abs(lat) <= 90) || !(Math.abs(lon) <= 180)) {
      throw this.#failed('answered a result without valid lat and lon', { status });
    }
    const address: Record<string, string> = {};
    if (isRecord(item.address)) for (const [part, value] of Object.entries(item.address)) if (typeof value === 'string') address[part] = value;
    const displayName = typeof item.display_name === 'string' ? item.display_name : '';
    const name = typeof item.name === 'string' && item.name !== '' ? item.name : (displayName.split(',')[0] ?? '').trim();
    const countryCode = address.country_code;
    return {
      name,
      country: countryCode !== undefined && /^[a-z]{2}$/i.test(countryCode) ? countryCode.toUpperCase() : undefined,
      lat,
      lon,
      displayName,
      address,
      category: optionalString(item.category),
      type: optionalString(item.type),
      importance: typeof item.importance === 'number' ? item.importance : undefined,
      osmType: optionalString(item.osm_type),
      osmId: typeof item.osm_id === 'number' ? item.osm_id : undefined,
      licence: optionalString(item.licence),
      source: 'nominatim',
    };
  }

  /** The provider's own error text: `{"error":"…"}` (LocationIQ, Nominatim reverse) or `{"error":{"message":"…"}}` (Nominatim 4). */
  #providerError(body: unknown): string | undefined {
    if (!isRecord(body)) return undefined;
    const { error } = body;
    const text = typeof error === 'string' ? error : isRecord(error) && typeof error.message === 'string' ? error.message : undefined;
    return text === undefined ? undefined : this.#redact(text).slice(0, PROVIDER_TEXT_MAX);
  }

  #redact(text: string): string {
    if (this.#apiKey === undefined) return text;
    return text.replaceAll(this.#apiKey, '***').replaceAll(encodeURIComponent(this.#apiKey), '***');
  }

  #failed(what: string, details: { status?: number; reason?: string }): AppError {
    return new AppError('IOTB_LOCATION_PROVIDER_FAILED', `The Nominatim geocoder at ${this.#base.host} ${what}`, details);
  }
}

/** The base URL, its path ending in `/` so that `search` and `reverse` resolve below it. */
function checkBaseUrl(baseUrl: string): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw invalid('baseUrl', 'The baseUrl must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('baseUrl', 'The baseUrl must be an http or https URL');
  // Not repeated in the message: a key pasted into the URL would be.
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw invalid('baseUrl', 'The baseUrl must have no query string, fragment or credentials: give an API key as apiKey');
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
