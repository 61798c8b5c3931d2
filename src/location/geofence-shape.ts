import booleanPointInPolygon from '@turf/boolean-point-in-polygon';
import kinks from '@turf/kinks';
import { AppError } from '../errors.js';
import { checkDegrees, checkLatLon, EARTH_RADIUS_M, geodist } from './geodesy.js';

/**
 * The area of a geofence: a GeoJSON Polygon / MultiPolygon (RFC 7946 §3.1.6, §3.1.7) or a circle (centre and radius
 * in metres), validated once when the geofence is written, plus the boxes an R-tree indexes it under.
 *
 * The antimeridian (lon ±180) can be crossed in two ways, both accepted:
 *  (a) RFC 7946 §3.1.9's recommended form: a MultiPolygon cut at the antimeridian, one part ending at 180 and the
 *      other starting at -180. A point on the cut line is on the boundary of a part, so it is inside.
 *  (b) A ring that continues across it, with longitudes beyond ±180 (e.g. 170 … 190 for 170°E … 170°W), allowed in
 *      [-360, 360] when the geofence spans less than 360° of longitude. A position is tested at its longitude and
 *      at longitude ± 360, so -175 is found in a ring drawn at 185.
 * Holes (inner rings) take their area out of the polygon. Whether a hole lies inside its outer ring is not checked.
 */

/** `[lon, lat]` in degrees; an altitude given as a third member is dropped. */
export type Position = [lon: number, lat: number];

export interface Polygon {
  readonly type: 'Polygon';
  /** Rings: the outer one first, then holes. Each closed (last position = first), at least 4 positions. */
  readonly coordinates: Position[][];
}

export interface MultiPolygon {
  readonly type: 'MultiPolygon';
  readonly coordinates: Position[][][];
}

/** `[minLon, minLat, maxLon, maxLat]` in degrees. */
export type BBox = readonly [minLon: number, minLat: number, maxLon: number, maxLat: number];

interface IndexedShape {
  /** Boxes within lon [-180, 180] that together cover the shape: two or more when it crosses the antimeridian. */
  readonly bboxes: readonly BBox[];
}

export interface PolygonShape extends IndexedShape {
  readonly kind: 'polygon';
  readonly geometry: Polygon | MultiPolygon;
  /** The geometry's own extent, longitudes as written (beyond ±180 in form (b)). */
  readonly extent: BBox;
}

export interface CircleShape extends IndexedShape {
  readonly kind: 'circle';
  readonly lat: number;
  readonly lon: number;
  /** Metres, in (0, MAX_CIRCLE_RADIUS_M]. */
  readonly radius: number;
}

export type GeofenceShape = PolygonShape | CircleShape;

/**
 * Positions in one geofence, all rings together: bounds the validation and test costs. @turf/kinks compares every
 * pair of edges on the event loop: ~45 ms at 2,500 positions on a 2-core machine, 0.5–0.9 s at 10,000, which would
 * hold every other request that long.
 */
export const MAX_GEOFENCE_POSITIONS = 2_500;
export const MAX_MULTIPOLYGON_PARTS = 100;
export const MAX_CIRCLE_RADIUS_M = 1_000_000;

/** Boxes are widened by this many degrees (about 1 cm) so that rounding never drops a point on an edge. */
const BOX_MARGIN = 1e-7;
const RAD = Math.PI / 180;

/**
 * Validates a geofence's area: exactly one of `geometry` (GeoJSON Polygon or MultiPolygon) and `circle`
 * (`{ lat, lon, radius }`, radius in metres). Throws IOTB_REQUEST_VALIDATION with `details.field` naming the
 * faulty member, e.g. `geometry.coordinates[0][3]`. An absent or null member counts as not given.
 * @example parseGeofenceShape({ circle: { lat: 48.8584, lon: 2.2945, radius: 300 } })
 */
export function parseGeofenceShape(input: { geometry?: unknown; circle?: unknown }): GeofenceShape {
  const hasGeometry = input.geometry !== undefined && input.geometry !== null;
  const hasCircle = input.circle !== undefined && input.circle !== null;
  if (hasGeometry && hasCircle) fail('geometry', 'give either geometry or circle, not both');
  if (hasGeometry) return parseGeometry(input.geometry);
  if (hasCircle) return parseCircle(input.circle);
  return fail('geometry', 'a geofence needs a geometry (GeoJSON Polygon or MultiPolygon) or a circle { lat, lon, radius }');
}

/**
 * Whether the point (degrees) is in `shape`. Circle: great-circle distance to the centre ≤ radius. Polygon: inside
 * an outer ring and not inside a hole; a point on a boundary (of the polygon or of a hole) counts as inside.
 */
export function containsPoint(shape: GeofenceShape, lat: number, lon: number): boolean {
  if (shape.kind === 'circle') return geodist(shape, { lat, lon }) <= shape.radius;
  const [minLon, minLat, maxLon, maxLat] = shape.extent;
  if (lat < minLat || lat > maxLat) return false;
  // lon ± 360 reaches rings written beyond ±180 (form b), and makes -180 and 180 the same meridian.
  for (const x of [lon, lon + 360, lon - 360]) {
    if (x >= minLon && x <= maxLon && booleanPointInPolygon([x, lat], shape.geometry)) return true;
  }
  return false;
}

function parseCircle(value: unknown): CircleShape {
  if (typeof value !== 'object' || Array.isArray(value)) fail('circle', 'circle must be an object { lat, lon, radius }: degrees and metres');
  const { lat, lon } = checkLatLon(value, 'circle');
  const { radius } = value as { radius?: unknown };
  if (typeof radius !== 'number' || !Number.isFinite(radius) || radius <= 0 || radius > MAX_CIRCLE_RADIUS_M) {
    fail('circle.radius', `circle.radius must be a number of metres above 0 and at most ${MAX_CIRCLE_RADIUS_M}`);
  }
  return { kind: 'circle', lat, lon, radius, bboxes: circleBoxes(lat, lon, radius) };
}

/** The boxes of a spherical cap: exact latitude extent; longitude extent asin(sin δ / cos φ) unless it covers a pole. */
function circleBoxes(lat: number, lon: number, radius: number): BBox[] {
  const δ = radius / EARTH_RADIUS_M;
  const minLat = lat - δ / RAD - BOX_MARGIN;
  const maxLat = lat + δ / RAD + BOX_MARGIN;
  if (minLat <= -90 || maxLat >= 90) return [[-180, Math.max(minLat, -90), 180, Math.min(maxLat, 90)]];
  const halfWidth = Math.asin(Math.min(1, Math.sin(δ) / Math.cos(lat * RAD))) / RAD + BOX_MARGIN;
  return wrapLonRange(lon - halfWidth, lon + halfWidth).map(([west, east]) => [west, minLat, east, maxLat] as const);
}

function parseGeometry(value: unknown): PolygonShape {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('geometry', 'geometry must be a GeoJSON Polygon or MultiPolygon object');
  const { type, coordinates } = value as { type?: unknown; coordinates?: unknown };
  if (type !== 'Polygon' && type !== 'MultiPolygon') {
    const got = typeof type === 'string' ? ` (got ${type.slice(0, 40)}${type === 'Feature' ? ': give the Feature\'s geometry' : ''})` : '';
    fail('geometry.type', `geometry.type must be Polygon or MultiPolygon${got}`);
  }
  const budget = { positions: 0 };
  let geometry: Polygon | MultiPolygon;
  if (type === 'Polygon') {
    geometry = { type, coordinates: parsePolygon(coordinates, 'geometry.coordinates', budget) };
  } else {
    const parts = checkArray(coordinates, 'geometry.coordinates', 'an array of polygons');
    if (parts.length === 0 || parts.length > MAX_MULTIPOLYGON_PARTS) {
      fail('geometry.coordinates', `a MultiPolygon has 1 to ${MAX_MULTIPOLYGON_PARTS} polygons (got ${parts.length})`);
    }
    geometry = { type, coordinates: parts.map((part, p) => parsePolygon(part, `geometry.coordinates[${p}]`, budget)) };
  }
  const outerRings = geometry.type === 'Polygon' ? [geometry.coordinates[0]] : geometry.coordinates.map((polygon) => polygon[0]);
  const partBoxes = outerRings.map((ring) => ringBox(ring ?? []));
  const extent: BBox = [
    Math.min(...partBoxes.map((box) => box[0])),
    Math.min(...partBoxes.map((box) => box[1])),
    Math.max(...partBoxes.map((box) => box[2])),
    Math.max(...partBoxes.map((box) => box[3])),
  ];
  if ((extent[0] < -180 || extent[2] > 180) && extent[2] - extent[0] >= 360) {
    fail('geometry.coordinates', 'longitudes beyond ±180 are for a geofence drawn across the antimeridian: it must span less than 360° of longitude');
  }
  const bboxes = partBoxes.flatMap(([minLon, minLat, maxLon, maxLat]) =>
    wrapLonRange(minLon, maxLon).map(([west, east]) => [west - BOX_MARGIN, minLat - BOX_MARGIN, east + BOX_MARGIN, maxLat + BOX_MARGIN] as const),
  );
  return { kind: 'polygon', geometry, extent, bboxes };
}

function parsePolygon(value: unknown, path: string, budget: { positions: number }): Position[][] {
  const rings = checkArray(value, path, 'an array of linear rings (the outer ring, then holes)');
  if (rings.length === 0) fail(path, `${path}: a polygon needs at least its outer ring`);
  return rings.map((ring, r) => parseRing(ring, `${path}[${r}]`, budget));
}

function parseRing(value: unknown, path: string, budget: { positions: number }): Position[] {
  const raw = checkArray(value, path, 'an array of positions [lon, lat]');
  if (raw.length < 4) fail(path, `${path}: a ring needs at least 4 positions (3 corners and the first repeated at the end), got ${raw.length}`);
  budget.positions += raw.length;
  if (budget.positions > MAX_GEOFENCE_POSITIONS) fail('geometry.coordinates', `a geofence has at most ${MAX_GEOFENCE_POSITIONS} positions`);
  const ring = raw.map((position, i) => parsePosition(position, `${path}[${i}]`));
  const first = ring[0] as Position;
  const last = ring[ring.length - 1] as Position;
  if (first[0] !== last[0] || first[1] !== last[1]) {
    fail(`${path}[${ring.length - 1}]`, `${path}: a ring must be closed: its last position [${last.join(', ')}] must equal its first [${first.join(', ')}]`);
  }
  checkSimple(ring, path);
  return ring;
}

function parsePosition(value: unknown, path: string): Position {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3) fail(path, `${path} must be a position [lon, lat] or [lon, lat, altitude]`);
  const [lon, lat, altitude] = value as unknown[];
  if (value.length === 3 && (typeof altitude !== 'number' || !Number.isFinite(altitude))) fail(path, `${path}: the altitude must be a finite number`);
  return [checkDegrees(lon, -360, 360, path, 'longitude'), checkDegrees(lat, -90, 90, path, 'latitude')];
}

/**
 * Throws when the ring crosses or touches itself (a bowtie), naming the position that starts the later of the two
 * edges. Repeated consecutive positions are harmless and skipped. @turf/kinks compares every pair of edges (O(n²)):
 * 0.5–0.9 s for one ring of MAX_GEOFENCE_POSITIONS on a current CPU.
 */
function checkSimple(ring: Position[], path: string): void {
  const distinct: Position[] = [];
  const originalIndex: number[] = [];
  ring.forEach((position, i) => {
    const previous = distinct[distinct.length - 1];
    if (previous !== undefined && previous[0] === position[0] && previous[1] === position[1]) return;
    distinct.push(position);
    originalIndex.push(i);
  });
  if (distinct.length < 4) fail(path, `${path}: a ring needs at least 3 distinct corners`);
  const crossing = kinks({ type: 'LineString', coordinates: distinct }).features[0]?.geometry.coordinates;
  if (crossing === undefined) return;
  const [x, y] = crossing as [number, number];
  const edges = edgesThrough(distinct, x, y).map((i) => ({ from: originalIndex[i] ?? 0, to: originalIndex[i + 1] ?? 0 }));
  const later = edges[1] ?? edges[0] ?? { from: 0, to: 1 };
  const earlier = edges[1] === undefined ? 'another edge' : `the edge from position ${edges[0]?.from} to ${edges[0]?.to}`;
  fail(`${path}[${later.from}]`, `${path}: the ring crosses or touches itself: the edge from position ${later.from} to ${later.to} meets ${earlier} at [${x}, ${y}]`);
}

/** Indices of the edges (i → i+1) of `ring` that pass within rounding distance of (x, y). */
function edgesThrough(ring: Position[], x: number, y: number): number[] {
  const found: number[] = [];
  const tolerance = 1e-9 * (1 + Math.abs(x) + Math.abs(y));
  for (let i = 0; i + 1 < ring.length; i++) {
    const [ax, ay] = ring[i] as Position;
    const [bx, by] = ring[i + 1] as Position;
    const dx = bx - ax;
    const dy = by - ay;
    const t = Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy || 1)));
    if (Math.hypot(ax + t * dx - x, ay + t * dy - y) <= tolerance) found.push(i);
  }
  return found;
}

function ringBox(ring: Position[]): BBox {
  const lons = ring.map((position) => position[0]);
  const lats = ring.map((position) => position[1]);
  return [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];
}

/** [min, max] longitudes (within [-360, 360], span < 360 unless within ±180) as ranges inside [-180, 180]. */
function wrapLonRange(min: number, max: number): Array<[number, number]> {
  if (max - min >= 360) return [[-180, 180]];
  if (min >= -180 && max <= 180) return [[min, max]];
  if (min > 180) return [[min - 360, max - 360]];
  if (max < -180) return [[min + 360, max + 360]];
  if (max > 180) return [[min, 180], [-180, max - 360]];
  return [[min + 360, 180], [-180, max]];
}

function checkArray(value: unknown, path: string, what: string): unknown[] {
  if (!Array.isArray(value)) fail(path, `${path} must be ${what}`);
  return value as unknown[];
}

function fail(field: string, message: string): never {
  throw new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
