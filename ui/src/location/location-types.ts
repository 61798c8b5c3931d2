// The location API's shapes, all taken from the generated types (schema.d.ts): none is written by hand.
import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

/** A geofence as `GET /geofences` lists it: a GeoJSON geometry or a circle. */
export type Geofence = ApiData<'/geofences'>['items'][number];
/** The body of `POST /geofences` and `PUT /geofences/{id}`. */
export type GeofenceWrite = paths['/geofences']['post']['requestBody']['content']['application/json'];
/** The answer to `POST /geofences/eval`. */
export type Evaluation = paths['/geofences/eval']['post']['responses'][200]['content']['application/json'];
/** An endpoint's last known position. */
export type Position = ApiData<'/location/positions'>['items'][number];
/** A place found by `GET /location/forward`. */
export type Place = ApiData<'/location/forward'>['items'][number];
/** The nearest place to a point (`GET /location/reverse`), with its distance in metres. */
export type NearbyPlace = ApiData<'/location/reverse'>;
/** A location service; an embedded one (`GET /location/services/{id}`) with its positions and import. */
export type LocationService = ApiData<'/location/services/{id}'>;
export type LocationServiceType = LocationService['type'];
/** The body of `POST /location/services`. */
export type LocationServiceWrite = paths['/location/services']['post']['requestBody']['content']['application/json'];
/** Where an import stands, and how it ended. */
export type ImportStatus = paths['/location/services/{id}/import']['post']['responses'][200]['content']['application/json'];
export type ImportFormat = ImportStatus['format'];

/** A form waiting for a point of the map ("Pick on map"): the page hands it the next click. */
export type PointPicker = (lat: number, lon: number) => void;

/** Every type of location service, in the order the form offers them. */
export const SERVICE_TYPES: readonly LocationServiceType[] = ['embedded', 'google', 'unwiredlabs', 'nominatim'];

/** What each type is, for the form and the list. */
export const SERVICE_TYPE_LABELS: Readonly<Record<LocationServiceType, string>> = {
  embedded: 'Embedded (cells, Wi-Fi)',
  google: 'Google Geolocation',
  unwiredlabs: 'Unwired Labs',
  nominatim: 'Nominatim (geocoding)',
};

/** HTTP providers that cannot work without the account's key (nominatim's is optional). */
export const KEY_REQUIRED: ReadonlySet<LocationServiceType> = new Set(['google', 'unwiredlabs']);

const DISTANCE = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

/** 850 → "850 m", 12345 → "12.3 km". */
export function formatDistance(metres: number): string {
  return metres < 1000 ? `${Math.round(metres)} m` : `${DISTANCE.format(metres / 1000)} km`;
}

/** Degrees to 5 decimals (about a metre): "52.51630, 13.37770". */
export function formatPoint(lat: number, lon: number): string {
  return `${lat.toFixed(5)}, ${lon.toFixed(5)}`;
}

/** "circle, 500 m" or "polygon" / "3 polygons": what a geofence's shape is, in a few words. */
export function shapeSummary(geofence: Geofence): string {
  if (geofence.circle !== undefined) return `circle, ${formatDistance(geofence.circle.radius)}`;
  const geometry = geofence.geometry as { type?: unknown; coordinates?: unknown } | undefined;
  if (geometry?.type === 'MultiPolygon' && Array.isArray(geometry.coordinates)) {
    return geometry.coordinates.length === 1 ? 'polygon' : `${geometry.coordinates.length} polygons`;
  }
  return 'polygon';
}
