// The location resources and the store interfaces behind them (implementations: src/store/location-*.ts).
import type { MultiPolygon, Polygon } from './geofence-shape.js';
import type { CellRow, WifiRow } from './opencellid-csv.js';

/** Where a geolocation or geocoding answer comes from, in the account's fallback order. */
export const LOCATION_SERVICE_TYPES = ['embedded', 'google', 'unwiredlabs', 'nominatim'] as const;
export type LocationServiceType = (typeof LOCATION_SERVICE_TYPES)[number];

/** A provider as the API shows it: the API key is write-only (`hasApiKey` says whether one is set). */
export interface LocationService {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly type: LocationServiceType;
  /** Fallback order within the account, from 0. */
  readonly position: number;
  /** Base URL of an HTTP provider; null for the embedded one. */
  readonly url: string | null;
  readonly hasApiKey: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** What the store keeps: the service and its API key. */
export interface LocationServiceRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly type: LocationServiceType;
  readonly position: number;
  readonly url: string | null;
  readonly apiKey: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** How a cell is looked up: OpenCelliD's radio (GSM, UMTS, CDMA, LTE, NR) and the identity a device reports. */
export interface CellIdentity {
  readonly radio: string;
  readonly mcc: number;
  readonly mnc: number;
  readonly area: number;
  readonly cell: number;
}

export interface KnownCell extends CellIdentity {
  readonly lat: number;
  readonly lon: number;
  readonly range: number;
}

export interface KnownWifi {
  readonly mac: string;
  readonly lat: number;
  readonly lon: number;
  readonly range: number;
}

export interface LocationServiceStore {
  /** The account's services in fallback order. */
  list(accountId: string): Promise<LocationServiceRecord[]>;
  get(accountId: string, id: string): Promise<LocationServiceRecord | undefined>;
  insert(service: LocationServiceRecord): Promise<void>;
  update(service: LocationServiceRecord): Promise<void>;
  /** Deletes the service and its imported positions. */
  delete(accountId: string, id: string): Promise<boolean>;
  /** Adds or replaces cell positions (same identity: the newer row wins). */
  putCells(serviceId: string, rows: readonly CellRow[]): Promise<void>;
  putWifi(serviceId: string, rows: readonly WifiRow[]): Promise<void>;
  /** Forgets every imported position of the service (an import with `replace`). */
  clearPositions(serviceId: string): Promise<void>;
  findCells(serviceId: string, cells: readonly CellIdentity[]): Promise<KnownCell[]>;
  findWifi(serviceId: string, macs: readonly string[]): Promise<KnownWifi[]>;
  countPositions(serviceId: string): Promise<{ cells: number; wifi: number }>;
  /** Adds lookups to the account's daily counts. */
  addUsage(rows: readonly { accountId: string; day: string; kind: string; count: number }[]): Promise<void>;
  usage(accountId: string, fromDay: string): Promise<Array<{ day: string; kind: string; count: number }>>;
}

/** A geofence as stored and shown: a GeoJSON Polygon/MultiPolygon or a circle. */
export interface Geofence {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly description: string | null;
  readonly tags: string[];
  readonly geometry?: Polygon | MultiPolygon;
  readonly circle?: { readonly lat: number; readonly lon: number; readonly radius: number };
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface GeofenceStore {
  /** Every geofence of the account (the in-memory index is built from them). */
  all(accountId: string): Promise<Geofence[]>;
  get(accountId: string, id: string): Promise<Geofence | undefined>;
  insert(geofence: Geofence): Promise<void>;
  update(geofence: Geofence): Promise<void>;
  delete(accountId: string, id: string): Promise<boolean>;
  /** The geofences the endpoint is inside, with when it entered (ms). */
  presence(endpointId: string): Promise<Map<string, number>>;
  /** Records entries and exits together. */
  changePresence(endpointId: string, entered: readonly string[], left: readonly string[], at: number): Promise<void>;
}

/** An endpoint's last known position. */
export interface EndpointPosition {
  readonly endpointId: string;
  readonly accountId: string;
  readonly lat: number;
  readonly lon: number;
  /** Metres, when known. */
  readonly accuracy: number | null;
  /** What gave it: `geofence-eval`, `api`, `geolocate`, a script. */
  readonly source: string;
  readonly at: string;
}

export interface PositionStore {
  put(position: EndpointPosition): Promise<void>;
  get(accountId: string, endpointId: string): Promise<EndpointPosition | undefined>;
  /** The account's newest positions, newest first, optionally inside [minLon, minLat, maxLon, maxLat]. */
  list(accountId: string, options: { bbox?: readonly [number, number, number, number] | undefined; limit: number }): Promise<EndpointPosition[]>;
}
