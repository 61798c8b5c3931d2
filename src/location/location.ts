import type { Endpoints } from '../domain/endpoints.js';
import { AppError } from '../errors.js';
import type { Event } from '../events/event.js';
import { Geocoding } from './geocoding.js';
import { Geofences } from './geofences.js';
import { Geolocation } from './geolocation.js';
import type { HttpJson } from './http-json.js';
import { LocationServices } from './location-services.js';
import type { GeofenceStore, LocationServiceStore, PositionStore } from './model.js';
import { Positions } from './positions.js';
import { LocationUsage } from './usage.js';

/** Location as the API and scripts reach it (docs/location.md). */
export interface Location {
  readonly services: LocationServices;
  readonly geolocation: Geolocation;
  readonly geocoding: Geocoding;
  readonly geofences: Geofences;
  readonly positions: Positions;
  readonly usage: LocationUsage;
}

export interface LocationStores {
  readonly locationServices: LocationServiceStore;
  readonly geofences: GeofenceStore;
  readonly positions: PositionStore;
}

export interface LocationOptions {
  /** HTTP to the providers (OutboundHttp.request: public addresses only unless the operator allows more). */
  readonly http: HttpJson;
  /** OutboundHttp.checkUrl: refuses a provider URL naming an address the service would not connect to. */
  readonly checkUrl: (url: string) => void;
  readonly cacheSeconds: number;
  readonly providerTimeoutMs: number;
  readonly geofencesPerAccount: number;
  readonly userAgent: string;
  readonly publish: (event: Event) => Promise<void>;
}

export function createLocation(stores: LocationStores, endpoints: Endpoints, options: LocationOptions): Location {
  const usage = new LocationUsage(stores.locationServices);
  const http = providerErrors(options.http);
  const services = new LocationServices(stores.locationServices, { checkUrl: options.checkUrl });
  const geolocation = new Geolocation(services, stores.locationServices, { http, cacheSeconds: options.cacheSeconds, providerTimeoutMs: options.providerTimeoutMs, usage });
  const geocoding = new Geocoding(services, { http, userAgent: options.userAgent, providerTimeoutMs: options.providerTimeoutMs, usage });
  const geofences = new Geofences(stores.geofences, stores.positions, endpoints, { maxPerAccount: options.geofencesPerAccount, publish: options.publish, usage });
  const positions = new Positions(stores.positions, endpoints);
  return { services, geolocation, geocoding, geofences, positions, usage };
}

/** A provider that cannot be reached (refused connection, timeout) is a failed provider, like one answering 500. */
function providerErrors(http: HttpJson): HttpJson {
  return async (request) => {
    try {
      return await http(request);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError('IOTB_LOCATION_PROVIDER_FAILED', `The location provider could not be reached: ${(error as Error).message}`, { status: 0 });
    }
  };
}
