import { AppError } from '../errors.js';

/**
 * Distances, bearings and destinations on a spherical Earth.
 *
 * Accuracy: the Earth is an ellipsoid (WGS-84), not a sphere. On a sphere of the IUGG mean radius the haversine
 * distance differs from the ellipsoidal (geodesic) distance by up to about 0.5 %: the ellipsoid's radius of
 * curvature runs from 6,335 km (north–south at the equator) to 6,400 km (at the poles), i.e. −0.56 % … +0.45 %
 * of the mean radius; over long mixed paths the error is typically under 0.3 % (Chris Veness, "Calculate
 * distance, bearing and more between Latitude/Longitude points", movable-type.co.uk/scripts/latlong.html;
 * Wikipedia, "Haversine formula" and "Great-circle distance"). Example: JFK–LAX airports are 3,974 km apart here and 3,983 km
 * (2,151 nm) on WGS-84 (gcmap.com). Good enough for geofences and "how far"; not for surveying.
 */

/** Earth's mean radius R₁ (IUGG), metres: the radius of the sphere every function here uses. */
export const EARTH_RADIUS_M = 6_371_008.8;

/** A position in degrees (WGS-84 latitude and longitude). */
export interface LatLon {
  readonly lat: number;
  readonly lon: number;
}

/** The units `convertDistance` converts metres to. */
export type DistanceUnit = 'm' | 'km' | 'mi' | 'nmi' | 'ft';

/** Metres per unit: international mile and foot (1959), international nautical mile (1929). */
const METRES_PER_UNIT: Readonly<Record<DistanceUnit, number>> = { m: 1, km: 1000, mi: 1609.344, nmi: 1852, ft: 0.3048 };

const RAD = Math.PI / 180;

/**
 * Great-circle distance in metres between `a` and `b`, by the haversine formula on a sphere of radius
 * EARTH_RADIUS_M (see the accuracy note at the top of this module). Well conditioned down to millimetres.
 * @example geodist({ lat: 48.8566, lon: 2.3522 }, { lat: 51.5074, lon: -0.1278 }) // ≈ 343,500 (Paris → London)
 */
export function geodist(a: LatLon, b: LatLon): number {
  const φ1 = a.lat * RAD;
  const φ2 = b.lat * RAD;
  const h = Math.sin((φ2 - φ1) / 2) ** 2 + Math.cos(φ1) * Math.cos(φ2) * Math.sin(((b.lon - a.lon) * RAD) / 2) ** 2;
  // min(1, …): rounding can push h a hair above 1 for antipodal points.
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * Initial bearing (forward azimuth) of the great circle from `a` to `b`, in degrees [0, 360) clockwise from true
 * north. 0 when the points are the same; from a pole, the bearing is measured against the meridian of `a.lon`.
 * @example bearing({ lat: 0, lon: 0 }, { lat: 0, lon: 1 }) // 90
 */
export function bearing(a: LatLon, b: LatLon): number {
  const φ1 = a.lat * RAD;
  const φ2 = b.lat * RAD;
  const Δλ = (b.lon - a.lon) * RAD;
  const y = Math.sin(Δλ) * Math.cos(φ2);
  const x = Math.cos(φ1) * Math.sin(φ2) - Math.sin(φ1) * Math.cos(φ2) * Math.cos(Δλ);
  return normalizeDegrees(Math.atan2(y, x) / RAD);
}

/**
 * The point reached by going `metres` along the great circle that leaves `from` at `bearingDeg` (clockwise from
 * north). The longitude of the answer is in [-180, 180).
 * @example destination({ lat: 0, lon: 0 }, 90, 111_195) // ≈ { lat: 0, lon: 1 }
 */
export function destination(from: LatLon, bearingDeg: number, metres: number): LatLon {
  const δ = metres / EARTH_RADIUS_M;
  const θ = bearingDeg * RAD;
  const φ1 = from.lat * RAD;
  const sinφ2 = Math.sin(φ1) * Math.cos(δ) + Math.cos(φ1) * Math.sin(δ) * Math.cos(θ);
  const φ2 = Math.asin(Math.max(-1, Math.min(1, sinφ2)));
  const Δλ = Math.atan2(Math.sin(θ) * Math.sin(δ) * Math.cos(φ1), Math.cos(δ) - Math.sin(φ1) * sinφ2);
  return { lat: φ2 / RAD, lon: normalizeLongitude(from.lon + Δλ / RAD) };
}

/**
 * `metres` expressed in `unit`: m, km, mi (international mile, 1,609.344 m), nmi (nautical mile, 1,852 m) or ft
 * (0.3048 m). Throws IOTB_REQUEST_VALIDATION (field `unit`) for any other unit, as script callers are untyped.
 * @example convertDistance(1852, 'nmi') // 1
 */
export function convertDistance(metres: number, unit: DistanceUnit): number {
  const perUnit = Object.hasOwn(METRES_PER_UNIT, unit) ? METRES_PER_UNIT[unit] : undefined;
  if (perUnit === undefined) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `unit must be one of ${Object.keys(METRES_PER_UNIT).join(', ')}`, { field: 'unit' });
  }
  return metres / perUnit;
}

/**
 * `value` as a LatLon when it is an object `{ lat, lon }` of finite numbers with lat in [-90, 90] and lon in
 * [-180, 180]; otherwise throws IOTB_REQUEST_VALIDATION naming the field (`<field>`, `<field>.lat` or
 * `<field>.lon`). Other members of `value` are ignored and not copied.
 * @example checkLatLon(body.position, 'position') // { lat, lon }
 */
export function checkLatLon(value: unknown, field: string): LatLon {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `${field} must be an object { lat, lon } in degrees`, { field });
  }
  const { lat, lon } = value as { lat?: unknown; lon?: unknown };
  return { lat: checkDegrees(lat, -90, 90, `${field}.lat`, 'latitude'), lon: checkDegrees(lon, -180, 180, `${field}.lon`, 'longitude') };
}

/** `value` when it is a finite number in [min, max]; throws IOTB_REQUEST_VALIDATION naming `field` otherwise. */
export function checkDegrees(value: unknown, min: number, max: number, field: string, what: 'latitude' | 'longitude'): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `${field} must be a ${what} in degrees (a finite number)`, { field });
  }
  if (value < min || value > max) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `${field}: ${what} ${value} is outside [${min}, ${max}]`, { field });
  }
  return value;
}

/** `degrees` in [0, 360). */
function normalizeDegrees(degrees: number): number {
  const d = degrees % 360;
  const positive = d < 0 ? d + 360 : d + 0; // + 0 turns -0 into 0
  return positive >= 360 ? 0 : positive; // -1e-15 + 360 rounds to 360
}

/** `lon` in [-180, 180). */
export function normalizeLongitude(lon: number): number {
  return normalizeDegrees(lon + 180) - 180;
}
