import { AppError } from '../../../errors.js';
import { bearing, checkLatLon, convertDistance, destination, geodist, type DistanceUnit, type LatLon } from '../../../location/geodesy.js';
import { ScriptArgumentError } from '../namespace.js';
import type { LocalNamespace } from './local.js';

const UNITS: readonly DistanceUnit[] = ['m', 'km', 'mi', 'nmi', 'ft'];

/** A `{lat, lon}` argument; a bad one reaches the script as its argument error. */
function point(value: unknown, name: string): LatLon {
  try {
    return checkLatLon(value, name);
  } catch (error) {
    throw error instanceof AppError ? new ScriptArgumentError(error.message) : error;
  }
}

function unitOf(options: unknown): DistanceUnit {
  const unit = (options as { unit?: unknown } | undefined)?.unit ?? 'm';
  if (!UNITS.includes(unit as DistanceUnit)) throw new ScriptArgumentError(`unit is one of ${UNITS.join(', ')}`);
  return unit as DistanceUnit;
}

/**
 * Distances and directions on the Earth as a sphere of the IUGG mean radius (6,371,008.8 m): haversine, within
 * ~0.5 % of the WGS-84 ellipsoid's distance (docs/location.md "Geospatial functions").
 */
export const geospatial: LocalNamespace = {
  /**
   * geospatial.geodist(a, b, {unit}?) → the great-circle distance between {lat, lon} points, in metres (unit m,
   * km, mi, nmi or ft). The older form geodist(lat1, lon1, lat2, lon2) → metres works too.
   */
  geodist: (args) => {
    if (typeof args[0] === 'number') {
      if (!args.slice(0, 4).every((v) => typeof v === 'number' && Number.isFinite(v))) throw new ScriptArgumentError('geodist takes two {lat, lon} points, or four numbers: lat1, lon1, lat2, lon2');
      const [lat1, lon1, lat2, lon2] = args as number[];
      return geodist(point({ lat: lat1, lon: lon1 }, 'a'), point({ lat: lat2, lon: lon2 }, 'b'));
    }
    return convertDistance(geodist(point(args[0], 'a'), point(args[1], 'b')), unitOf(args[2]));
  },
  /** geospatial.bearing(a, b) → the initial bearing from a to b, degrees clockwise from north (0 to 360). */
  bearing: (args) => bearing(point(args[0], 'a'), point(args[1], 'b')),
  /** geospatial.destination(from, bearing, distance, {unit}?) → the {lat, lon} reached going `distance` (metres, or unit) along `bearing` degrees. */
  destination: (args) => {
    const from = point(args[0], 'from');
    const [, heading, distance] = args;
    if (typeof heading !== 'number' || !Number.isFinite(heading)) throw new ScriptArgumentError('bearing must be a number of degrees');
    if (typeof distance !== 'number' || !Number.isFinite(distance) || distance < 0) throw new ScriptArgumentError('distance must be a number ≥ 0');
    return destination(from, heading, distance / convertDistance(1, unitOf(args[3])));
  },
};
