import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import { estimatePosition } from './estimate.js';
import { openCellIdRadio, parseGeolocationRequest, type GeolocationRequest } from './geolocation-input.js';
import { GoogleStyleGeolocation, UnwiredLabsGeolocation } from './geolocation-providers.js';
import type { HttpJson } from './http-json.js';
import type { LocationServices } from './location-services.js';
import type { CellIdentity, LocationServiceRecord, LocationServiceStore, LocationServiceType } from './model.js';
import type { LocationUsage } from './usage.js';

/** An answer of `POST /location/geolocate` and `location.geolocate`. */
export interface GeolocationResult {
  readonly lat: number;
  readonly lon: number;
  /** Metres. */
  readonly accuracy: number;
  /** The observations that gave it: `cell`, `wifi`, `cell+wifi`, or `ip`. */
  readonly source: string;
  readonly provider: { readonly id: string; readonly name: string; readonly type: LocationServiceType };
  /** Embedded look-ups: how many of the cells and access points were known. */
  readonly matched?: { readonly cells: number; readonly wifi: number };
  readonly cached: boolean;
}

export interface GeolocationOptions {
  readonly http: HttpJson;
  /** How long an answer (or "no position") is reused for the same observations. 0: never. */
  readonly cacheSeconds: number;
  readonly providerTimeoutMs: number;
  readonly usage: LocationUsage;
}

type Found = Omit<GeolocationResult, 'cached'>;

/** Answers kept at most (per process); each is a few hundred bytes. */
const CACHE_ENTRIES = 50_000;

/**
 * Positions from cells, Wi-Fi access points and addresses: the account's location services in order, the first
 * that knows a position answers. Embedded services look the observations up in their imported positions and
 * estimate a position from every match (estimate.ts); HTTP providers are asked in their published formats.
 */
export class Geolocation {
  readonly #services: LocationServices;
  readonly #store: LocationServiceStore;
  readonly #options: GeolocationOptions;
  readonly #cache: LRUCache<string, { found: Found | null }> | undefined;

  constructor(services: LocationServices, store: LocationServiceStore, options: GeolocationOptions) {
    this.#services = services;
    this.#store = store;
    this.#options = options;
    this.#cache = options.cacheSeconds > 0 ? lruCache(CACHE_ENTRIES, { ttl: options.cacheSeconds * 1000 }) : undefined;
    services.onChange(() => this.forget());
  }

  /** Throws `IOTB_LOCATION_NOT_FOUND` when no service knows a position, `IOTB_LOCATION_PROVIDER_FAILED` when one failed and none answered. */
  async locate(scope: Scope, body: unknown): Promise<GeolocationResult> {
    const request = parseGeolocationRequest(body);
    this.#options.usage.count(scope.accountId, 'geolocate');
    const key = `${scope.accountId}\u0000${JSON.stringify(request)}`;
    const cached = this.#cache?.get(key);
    if (cached) {
      if (cached.found) return { ...cached.found, cached: true };
      throw new AppError('IOTB_LOCATION_NOT_FOUND');
    }
    let failure: unknown;
    for (const service of await this.#services.records(scope.accountId)) {
      if (service.type === 'nominatim') continue;
      try {
        this.#options.usage.count(scope.accountId, `geolocate:${service.type}`);
        const found = service.type === 'embedded' ? await this.#embedded(service, request) : await this.#remote(service, request);
        if (found) {
          this.#cache?.set(key, { found });
          return { ...found, cached: false };
        }
      } catch (error) {
        if (!(error instanceof AppError) || (error.code !== 'IOTB_LOCATION_PROVIDER_FAILED' && error.code !== 'IOTB_OUTBOUND_ADDRESS_REFUSED')) throw error;
        failure = error;
      }
    }
    if (failure) throw failure as AppError;
    this.#cache?.set(key, { found: null });
    throw new AppError('IOTB_LOCATION_NOT_FOUND');
  }

  /** Answers change when services or their imported positions do. */
  forget(): void {
    this.#cache?.clear();
  }

  async #embedded(service: LocationServiceRecord, request: GeolocationRequest): Promise<Found | undefined> {
    const identities: CellIdentity[] = [];
    for (const cell of request.cells) {
      const radio = openCellIdRadio(cell.radioType);
      if (radio) identities.push({ radio, mcc: cell.mcc, mnc: cell.mnc, area: cell.area, cell: cell.cellId });
    }
    const [cells, wifi] = await Promise.all([
      this.#store.findCells(service.id, identities),
      this.#store.findWifi(service.id, request.wifi.map((ap) => ap.macAddress)),
    ]);
    const observed = (cell: CellIdentity) =>
      request.cells.find((c) => openCellIdRadio(c.radioType) === cell.radio && c.mcc === cell.mcc && c.mnc === cell.mnc && c.area === cell.area && c.cellId === cell.cell);
    const estimate = estimatePosition([
      ...cells.map((cell) => {
        const seen = observed(cell);
        return { kind: 'cell' as const, radio: cell.radio, lat: cell.lat, lon: cell.lon, range: cell.range, signalStrength: seen?.signalStrength, timingAdvance: seen?.timingAdvance };
      }),
      ...wifi.map((ap) => ({ kind: 'wifi' as const, lat: ap.lat, lon: ap.lon, range: ap.range, signalStrength: request.wifi.find((w) => w.macAddress === ap.mac)?.signalStrength })),
    ]);
    if (!estimate) return undefined;
    return {
      lat: estimate.lat,
      lon: estimate.lon,
      accuracy: Math.round(estimate.accuracy),
      source: sourceOf(cells.length, wifi.length),
      provider: providerOf(service),
      matched: { cells: cells.length, wifi: wifi.length },
    };
  }

  async #remote(service: LocationServiceRecord, request: GeolocationRequest): Promise<Found | undefined> {
    const settings = { url: service.url ?? '', apiKey: service.apiKey ?? '', http: this.#options.http, timeoutMs: this.#options.providerTimeoutMs };
    const provider = service.type === 'google' ? new GoogleStyleGeolocation(settings) : new UnwiredLabsGeolocation(settings);
    const found = await provider.locate(request);
    if (!found) return undefined;
    const source = request.cells.length + request.wifi.length === 0 ? 'ip' : sourceOf(request.cells.length, request.wifi.length);
    return { lat: found.lat, lon: found.lon, accuracy: Math.round(found.accuracy), source, provider: providerOf(service) };
  }
}

function sourceOf(cells: number, wifi: number): string {
  if (cells > 0 && wifi > 0) return 'cell+wifi';
  return wifi > 0 ? 'wifi' : 'cell';
}

function providerOf(service: LocationServiceRecord): GeolocationResult['provider'] {
  return { id: service.id, name: service.name, type: service.type };
}
