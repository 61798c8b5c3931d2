import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import { checkCoordinates, checkCountry, checkLimit, checkQuery } from './geocode-input.js';
import type { HttpJson } from './http-json.js';
import type { LocationServices } from './location-services.js';
import type { LocationServiceRecord } from './model.js';
import { NominatimGeocoder, type NominatimNearbyPlace, type NominatimPlace } from './nominatim.js';
import { PlaceIndex, type NearbyPlace, type Place } from './places.js';
import type { LocationUsage } from './usage.js';

/** Which provider answered: one of the account's Nominatim services, or the embedded places. */
export interface GeocodingProvider {
  readonly id: string | null;
  readonly name: string;
  readonly type: 'embedded' | 'nominatim';
}

export interface GeocodingOptions {
  readonly http: HttpJson;
  /** Nominatim's usage policy asks every client to name itself. */
  readonly userAgent: string;
  readonly providerTimeoutMs: number;
  readonly usage: LocationUsage;
}

const EMBEDDED: GeocodingProvider = { id: null, name: 'GeoNames places (embedded)', type: 'embedded' };

/**
 * Forward and reverse geocoding: the account's Nominatim-compatible services in order (street-level), then the
 * embedded places (cities and towns of at least 1,000 people, GeoNames), which need no network. A provider that
 * fails or knows nothing hands over to the next.
 */
export class Geocoding {
  readonly #services: LocationServices;
  readonly #options: GeocodingOptions;

  constructor(services: LocationServices, options: GeocodingOptions) {
    this.#services = services;
    this.#options = options;
  }

  async forward(scope: Scope, query: string, options: { country?: string | undefined; limit?: number | undefined }): Promise<{ items: Array<Place | NominatimPlace>; provider: GeocodingProvider }> {
    const q = checkQuery(query);
    const country = checkCountry(options.country);
    const limit = checkLimit(options.limit, 10);
    this.#options.usage.count(scope.accountId, 'forward');
    for (const service of await this.#nominatim(scope)) {
      const items = await this.#ask(() => this.#client(service).forward(q, { country, limit }));
      if (items && items.length > 0) return { items, provider: providerOf(service) };
    }
    const places = await PlaceIndex.load();
    return { items: places.forward(q, { country, limit }), provider: EMBEDDED };
  }

  /** The nearest place to the point, with its distance in metres; `IOTB_LOCATION_NOT_FOUND` only if there is none at all. */
  async reverse(scope: Scope, lat: number, lon: number): Promise<(NearbyPlace | NominatimNearbyPlace) & { provider: GeocodingProvider }> {
    checkCoordinates(lat, lon);
    this.#options.usage.count(scope.accountId, 'reverse');
    for (const service of await this.#nominatim(scope)) {
      const found = await this.#ask(() => this.#client(service).reverse(lat, lon));
      if (found) return { ...found, provider: providerOf(service) };
    }
    const nearest = (await PlaceIndex.load()).reverse(lat, lon, { limit: 1 })[0];
    if (!nearest) throw new AppError('IOTB_LOCATION_NOT_FOUND');
    return { ...nearest, provider: EMBEDDED };
  }

  async #nominatim(scope: Scope): Promise<LocationServiceRecord[]> {
    return (await this.#services.records(scope.accountId)).filter((service) => service.type === 'nominatim');
  }

  #client(service: LocationServiceRecord): NominatimGeocoder {
    return new NominatimGeocoder({
      baseUrl: service.url ?? '',
      http: this.#options.http,
      userAgent: this.#options.userAgent,
      timeoutMs: this.#options.providerTimeoutMs,
      ...(service.apiKey ? { apiKey: service.apiKey } : {}),
    });
  }

  /** A provider's answer, or undefined when it failed: the next one is tried. */
  async #ask<T>(call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof AppError && (error.code === 'IOTB_LOCATION_PROVIDER_FAILED' || error.code === 'IOTB_OUTBOUND_ADDRESS_REFUSED')) return undefined;
      throw error;
    }
  }
}

function providerOf(service: LocationServiceRecord): GeocodingProvider {
  return { id: service.id, name: service.name, type: 'nominatim' };
}
