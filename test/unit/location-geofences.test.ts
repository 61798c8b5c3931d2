// Geodesy helpers, geofence shapes (validation, containment, the antimeridian) and the R-tree index of geofences.
// Pure: no socket, no store.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';
import { bearing, checkLatLon, convertDistance, destination, EARTH_RADIUS_M, geodist, type DistanceUnit } from '../../src/location/geodesy.js';
import { GeofenceIndex } from '../../src/location/geofence-index.js';
import { containsPoint, MAX_GEOFENCE_POSITIONS, parseGeofenceShape, type GeofenceShape, type Position } from '../../src/location/geofence-shape.js';

const RAD = Math.PI / 180;

/** Asserts that `run` throws IOTB_REQUEST_VALIDATION with `details.field` = `field`. */
function assertInvalid(run: () => unknown, field: string): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.code, 'IOTB_REQUEST_VALIDATION');
    assert.deepEqual(error.details, { field });
    assert.ok(error.message.length > 10);
    return true;
  });
}

const square = (west: number, south: number, east: number, north: number): Position[] => [
  [west, south],
  [east, south],
  [east, north],
  [west, north],
  [west, south],
];

describe('geodesy', () => {
  // Ed Williams, Aviation Formulary, worked examples: LAX (33°57'N 118°24'W) = (0.592539, 2.066470) rad and
  // JFK (40°38'N 73°47'W) = (0.709186, 1.287762) rad, west longitudes positive there.
  const lax = { lat: 0.592539 / RAD, lon: -2.06647 / RAD };
  const jfk = { lat: 0.709186 / RAD, lon: -1.287762 / RAD };

  it('gives the Aviation Formulary LAX → JFK distance (0.623585 rad) and initial course (1.150035 rad)', () => {
    // The example's inputs and results have 6 decimals: tolerance 2e-6 rad (about 13 m, 0.0001°).
    const angle = geodist(lax, jfk) / EARTH_RADIUS_M;
    const course = bearing(lax, jfk) * RAD;
    assert.ok(Math.abs(angle - 0.623585) < 2e-6, String(angle));
    assert.ok(Math.abs(course - 1.150035) < 2e-6, String(course));
  });

  it('gives Rosetta Code\'s haversine BNA → LAX distance (2887.2599506071106 km with R = 6372.8 km)', () => {
    const km = (geodist({ lat: 36.12, lon: -86.67 }, { lat: 33.94, lon: -118.4 }) / EARTH_RADIUS_M) * 6372.8;
    assert.ok(Math.abs(km - 2887.2599506071106) < 1e-6, String(km));
  });

  it('gives Paris → London ≈ 343.5 km and 1° of latitude ≈ 111.195 km on the IUGG mean sphere', () => {
    const parisLondon = geodist({ lat: 48.8566, lon: 2.3522 }, { lat: 51.5074, lon: -0.1278 });
    assert.ok(Math.abs(parisLondon - 343_500) < 500, String(parisLondon)); // tolerance 0.5 km
    assert.ok(Math.abs(geodist({ lat: 10, lon: 30 }, { lat: 11, lon: 30 }) - 111_195.08) < 0.01);
    assert.equal(geodist({ lat: 12.5, lon: -7 }, { lat: 12.5, lon: -7 }), 0);
    // Half the circumference between antipodes, without NaN from rounding.
    assert.ok(Math.abs(geodist({ lat: 0, lon: 0 }, { lat: 0, lon: 180 }) - Math.PI * EARTH_RADIUS_M) < 1e-6);
  });

  it('stays within the documented 0.5 % of the WGS-84 distance: JFK → LAX is 2,151 nm on the ellipsoid (gcmap.com)', () => {
    const sphere = geodist({ lat: 40.6413, lon: -73.7781 }, { lat: 33.9416, lon: -118.4085 });
    const ellipsoid = 2151 * 1852;
    assert.ok(Math.abs(sphere - ellipsoid) / ellipsoid < 0.005, String(sphere));
  });

  it('measures bearings clockwise from north in [0, 360)', () => {
    assert.equal(bearing({ lat: 10, lon: 20 }, { lat: 11, lon: 20 }), 0);
    assert.equal(bearing({ lat: 0, lon: 0 }, { lat: 0, lon: 1 }), 90);
    assert.equal(bearing({ lat: 10, lon: 20 }, { lat: 9, lon: 20 }), 180);
    assert.equal(bearing({ lat: 0, lon: 0 }, { lat: 0, lon: -1 }), 270);
    assert.equal(bearing({ lat: 0, lon: 179.5 }, { lat: 0, lon: -179.5 }), 90); // east, across the antimeridian
  });

  it('finds the Aviation Formulary destination: 100 nm from LAX on course 1.15 rad is (0.604180, 2.034206) rad', () => {
    const metres = 100 * (Math.PI / (180 * 60)) * EARTH_RADIUS_M; // 100 nm as an arc of the sphere
    const point = destination(lax, 1.15 / RAD, metres);
    assert.ok(Math.abs(point.lat * RAD - 0.60418) < 2e-6, String(point.lat * RAD));
    assert.ok(Math.abs(-point.lon * RAD - 2.034206) < 2e-6, String(point.lon * RAD));
  });

  it('goes to a destination and back: the distance and the bearing are the ones given', () => {
    const from = { lat: 48.8566, lon: 2.3522 };
    for (const [course, metres] of [[0, 1000], [45, 250_000], [200, 3_000_000], [315.5, 12]] as const) {
      const to = destination(from, course, metres);
      assert.ok(Math.abs(geodist(from, to) - metres) < 1e-6 * Math.max(1, metres), `${course} ${metres}`);
      assert.ok(Math.abs(bearing(from, to) - course) < 1e-7, `${course} ${metres}`);
    }
    const across = destination({ lat: 0, lon: 179.5 }, 90, 111_195.08);
    assert.ok(Math.abs(across.lon - -179.5) < 1e-6 && Math.abs(across.lat) < 1e-9, JSON.stringify(across));
  });

  it('converts metres to km, mi, nmi and ft and refuses other units', () => {
    assert.equal(convertDistance(343_500, 'km'), 343.5);
    assert.equal(convertDistance(1852, 'nmi'), 1);
    assert.equal(convertDistance(1609.344, 'mi'), 1);
    assert.equal(convertDistance(0.3048, 'ft'), 1);
    assert.equal(convertDistance(7, 'm'), 7);
    assertInvalid(() => convertDistance(1, 'yd' as DistanceUnit), 'unit');
    assertInvalid(() => convertDistance(1, 'toString' as DistanceUnit), 'unit');
  });

  it('checks {lat, lon} objects, naming the field', () => {
    assert.deepEqual(checkLatLon({ lat: -90, lon: 180, extra: 1 }, 'position'), { lat: -90, lon: 180 });
    assertInvalid(() => checkLatLon(null, 'position'), 'position');
    assertInvalid(() => checkLatLon([1, 2], 'position'), 'position');
    assertInvalid(() => checkLatLon({ lat: 91, lon: 0 }, 'position'), 'position.lat');
    assertInvalid(() => checkLatLon({ lat: '45', lon: 0 }, 'position'), 'position.lat');
    assertInvalid(() => checkLatLon({ lat: 45, lon: 181 }, 'position'), 'position.lon');
    assertInvalid(() => checkLatLon({ lat: 45, lon: Number.NaN }, 'position'), 'position.lon');
    assertInvalid(() => checkLatLon({ lat: 45 }, 'position'), 'position.lon');
  });
});

describe('geofence shapes: validation', () => {
  const polygon = (coordinates: unknown) => () => parseGeofenceShape({ geometry: { type: 'Polygon', coordinates } });

  it('accepts a polygon (an altitude is dropped) and a circle', () => {
    const shape = parseGeofenceShape({ geometry: { type: 'Polygon', coordinates: [[[0, 0, 5], [1, 0, 5], [1, 1, 5], [0, 0, 5]]] } });
    assert.equal(shape.kind, 'polygon');
    assert.deepEqual(shape.kind === 'polygon' && shape.geometry.coordinates, [[[0, 0], [1, 0], [1, 1], [0, 0]]]);
    const circle = parseGeofenceShape({ circle: { lat: 48.8584, lon: 2.2945, radius: 1_000_000 }, geometry: null });
    assert.deepEqual(circle.kind === 'circle' && [circle.lat, circle.lon, circle.radius], [48.8584, 2.2945, 1_000_000]);
  });

  it('takes exactly one of geometry and circle', () => {
    assertInvalid(() => parseGeofenceShape({ geometry: { type: 'Polygon', coordinates: [square(0, 0, 1, 1)] }, circle: { lat: 0, lon: 0, radius: 5 } }), 'geometry');
    assertInvalid(() => parseGeofenceShape({}), 'geometry');
  });

  it('refuses other geometry types and malformed coordinates', () => {
    assertInvalid(() => parseGeofenceShape({ geometry: { type: 'Point', coordinates: [0, 0] } }), 'geometry.type');
    assertInvalid(() => parseGeofenceShape({ geometry: { type: 'Feature', geometry: { type: 'Polygon' } } }), 'geometry.type');
    assertInvalid(() => parseGeofenceShape({ geometry: 'POLYGON((0 0, 1 0, 1 1, 0 0))' }), 'geometry');
    assertInvalid(polygon(undefined), 'geometry.coordinates');
    assertInvalid(polygon([]), 'geometry.coordinates');
    assertInvalid(polygon([[[0, 0], [1, 0], '1,1', [0, 0]]]), 'geometry.coordinates[0][2]');
    assertInvalid(polygon([[[0, 0], [1, 0], [1, 1, 0, 0], [0, 0]]]), 'geometry.coordinates[0][2]');
    assertInvalid(polygon([[[0, 0], [1, 0], [1, 1, 'high'], [0, 0]]]), 'geometry.coordinates[0][2]');
  });

  it('refuses a ring of 3 positions and an unclosed ring', () => {
    assertInvalid(polygon([[[0, 0], [1, 0], [0, 0]]]), 'geometry.coordinates[0]');
    assertInvalid(polygon([[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0.5]]]), 'geometry.coordinates[0][4]');
    assertInvalid(polygon([square(0, 0, 10, 10), [[4, 4], [6, 4], [6, 6], [4, 6]]]), 'geometry.coordinates[1][3]');
    assertInvalid(polygon([[[0, 0], [1, 0], [1, 0], [0, 0]]]), 'geometry.coordinates[0]'); // 2 distinct corners
  });

  it('refuses a self-intersecting ring (a bowtie), naming the edge that crosses', () => {
    // Edge 2 → 3 crosses edge 0 → 1 at (0.5, 0.5).
    assertInvalid(polygon([[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]), 'geometry.coordinates[0][2]');
    // A hole drawn as a figure of eight.
    assertInvalid(polygon([square(0, 0, 10, 10), [[2, 2], [4, 4], [4, 2], [2, 4], [2, 2]]]), 'geometry.coordinates[1][2]');
    // In a MultiPolygon's second part.
    assertInvalid(
      () => parseGeofenceShape({ geometry: { type: 'MultiPolygon', coordinates: [[square(0, 0, 1, 1)], [[[5, 5], [6, 6], [6, 5], [5, 6], [5, 5]]]] } }),
      'geometry.coordinates[1][0][2]',
    );
    // A repeated position is not a crossing.
    assert.equal(polygon([[[0, 0], [1, 0], [1, 0], [1, 1], [0, 0]]])().kind, 'polygon');
  });

  it('refuses latitudes beyond ±90 and longitudes beyond ±360 or spanning 360°', () => {
    assertInvalid(polygon([[[0, 0], [0, 91], [1, 1], [0, 0]]]), 'geometry.coordinates[0][1]');
    assertInvalid(polygon([[[0, 0], [361, 0], [1, 1], [0, 0]]]), 'geometry.coordinates[0][1]');
    assertInvalid(polygon([square(-190, 0, 190, 10)]), 'geometry.coordinates');
    assert.equal(polygon([square(-180, -90, 180, 90)])().kind, 'polygon'); // the whole world, written within ±180
  });

  it('refuses a circle with a bad centre or radius', () => {
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 91, lon: 0, radius: 10 } }), 'circle.lat');
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 0, lon: 181, radius: 10 } }), 'circle.lon');
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 0, lon: 0, radius: 0 } }), 'circle.radius');
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 0, lon: 0, radius: -5 } }), 'circle.radius');
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 0, lon: 0, radius: 1_000_001 } }), 'circle.radius');
    assertInvalid(() => parseGeofenceShape({ circle: { lat: 0, lon: 0 } }), 'circle.radius');
    assertInvalid(() => parseGeofenceShape({ circle: 'here' }), 'circle');
  });

  it('bounds the size: 100 polygons per MultiPolygon, MAX_GEOFENCE_POSITIONS (2,500) per geofence', () => {
    const parts = Array.from({ length: 101 }, (_, i) => [square(i, 0, i + 0.5, 1)]);
    assertInvalid(() => parseGeofenceShape({ geometry: { type: 'MultiPolygon', coordinates: parts } }), 'geometry.coordinates');
    assert.equal(parseGeofenceShape({ geometry: { type: 'MultiPolygon', coordinates: parts.slice(0, 100) } }).kind, 'polygon');
    assertInvalid(() => parseGeofenceShape({ geometry: { type: 'MultiPolygon', coordinates: [] } }), 'geometry.coordinates');
    const ring = (n: number): Position[] => [
      ...Array.from({ length: n - 1 }, (_, i): Position => [Math.cos((2 * Math.PI * i) / (n - 1)), Math.sin((2 * Math.PI * i) / (n - 1))]),
      [1, 0],
    ];
    assertInvalid(polygon([ring(MAX_GEOFENCE_POSITIONS + 1)]), 'geometry.coordinates');
    // Counted over all rings: an outer ring (5 positions) and small holes of 5 positions each.
    const fit = (MAX_GEOFENCE_POSITIONS - 5) / 5;
    const holes = Array.from({ length: fit + 1 }, (_, i) => square(i / 1000, 0, i / 1000 + 0.0005, 0.0005));
    assertInvalid(polygon([square(-1, -1, 3, 1), ...holes]), 'geometry.coordinates');
    assert.equal(polygon([square(-1, -1, 3, 1), ...holes.slice(0, fit)])().kind, 'polygon');
  });
});

describe('geofence shapes: containment', () => {
  const parse = (geometry: unknown): GeofenceShape => parseGeofenceShape({ geometry });
  const inside = (shape: GeofenceShape, points: Array<[lat: number, lon: number]>) =>
    points.map(([lat, lon]) => containsPoint(shape, lat, lon));

  it('excludes a hole, and counts both boundaries as inside', () => {
    const shape = parse({ type: 'Polygon', coordinates: [square(0, 0, 10, 10), square(4, 4, 6, 6)] });
    assert.deepEqual(inside(shape, [[2, 2], [5, 5], [5, 4], [0, 5], [10, 10], [11, 5], [5, -0.001]]), [true, false, true, true, true, false, false]);
  });

  it('finds a point in either part of a MultiPolygon', () => {
    const shape = parse({ type: 'MultiPolygon', coordinates: [[square(0, 0, 1, 1)], [square(5, 5, 6, 6), square(5.4, 5.4, 5.6, 5.6)]] });
    assert.deepEqual(inside(shape, [[0.5, 0.5], [5.2, 5.2], [3, 3], [5.5, 5.5]]), [true, true, false, false]);
  });

  it('measures a circle by great-circle distance, its edge inside', () => {
    // 1 km around the Eiffel Tower: the Trocadéro is in, the Arc de Triomphe (1.7 km north) is out.
    const eiffel = { lat: 48.8584, lon: 2.2945 };
    const shape = parseGeofenceShape({ circle: { ...eiffel, radius: 1000 } });
    assert.deepEqual(inside(shape, [[48.8616, 2.2893], [48.8738, 2.295]]), [true, false]);
    const near = destination(eiffel, 45, 999.999);
    const beyond = destination(eiffel, 45, 1000.001);
    assert.deepEqual(inside(shape, [[near.lat, near.lon], [beyond.lat, beyond.lon]]), [true, false]);
  });

  it('RFC 7946 §3.1.9: a MultiPolygon cut at the antimeridian around Fiji', () => {
    const fiji = parse({ type: 'MultiPolygon', coordinates: [[square(177, -19, 180, -16)], [square(-180, -19, -178, -16)]] });
    const suva: [number, number] = [-18.1416, 178.4415];
    assert.deepEqual(inside(fiji, [suva, [-17, 179.5], [-17, -179.5], [-17, 180], [-17, -180], [-17, 176], [-17, -177], [-20, 179.5]]), [
      true, true, true, true, true, false, false, false,
    ]);
    assert.equal(fiji.bboxes.length, 2);
  });

  it('a ring drawn across the antimeridian, 170 … 190 or -190 … -170', () => {
    for (const ring of [square(170, -20, 190, -10), square(-190, -20, -170, -10)]) {
      const shape = parse({ type: 'Polygon', coordinates: [ring] });
      assert.deepEqual(inside(shape, [[-15, 175], [-15, -175], [-15, 180], [-15, -180], [-15, -169], [-15, 169], [-21, 175]]), [
        true, true, true, true, false, false, false,
      ]);
      assert.deepEqual(shape.bboxes.map((box) => [Math.round(box[0]), Math.round(box[2])]), [[170, 180], [-180, -170]]);
    }
  });

  it('a circle across the antimeridian and a circle around the pole', () => {
    const dateline = parseGeofenceShape({ circle: { lat: -17, lon: 179.9, radius: 50_000 } });
    assert.deepEqual(inside(dateline, [[-17, -179.9], [-17, 179.5], [-17, -179]]), [true, true, false]);
    assert.equal(dateline.bboxes.length, 2);
    const pole = parseGeofenceShape({ circle: { lat: 89.9, lon: 0, radius: 50_000 } });
    assert.deepEqual(pole.bboxes.map((box) => [box[0], box[2], Math.min(box[3], 90)]), [[-180, 180, 90]]);
    assert.deepEqual(inside(pole, [[89.9, 180], [90, 0], [89.5, 90]]), [true, true, false]);
  });
});

describe('GeofenceIndex', () => {
  interface Fence {
    readonly id: string;
    readonly tags: readonly string[];
  }
  const fence = (id: string, tags: string[], input: { geometry?: unknown; circle?: unknown }) => ({ id, tags, shape: parseGeofenceShape(input) });
  const ids = (index: GeofenceIndex<Fence>, lat: number, lon: number, tags?: string[]) =>
    index.containing(lat, lon, tags === undefined ? {} : { tags }).map((found) => found.id);

  const fences = () => [
    fence('paris', ['fr', 'city'], { circle: { lat: 48.8566, lon: 2.3522, radius: 10_000 } }),
    fence('eiffel', ['fr', 'site'], { circle: { lat: 48.8584, lon: 2.2945, radius: 300 } }),
    fence('fiji', ['fj'], { geometry: { type: 'MultiPolygon', coordinates: [[square(177, -19, 180, -16)], [square(-180, -19, -178, -16)]] } }),
    fence('dateline', ['fj', 'sea'], { circle: { lat: -17, lon: 179.9, radius: 50_000 } }),
    fence('north-pole', ['sea'], { circle: { lat: 89.9, lon: 0, radius: 50_000 } }),
    fence('donut', ['fr'], { geometry: { type: 'Polygon', coordinates: [square(2, 48, 3, 49), square(2.2, 48.8, 2.5, 48.9)] } }),
  ];

  it('finds the geofences holding a point, from either side of the antimeridian and across the pole', () => {
    const index = GeofenceIndex.build<Fence>(fences());
    assert.equal(index.size, 6);
    assert.deepEqual(ids(index, 48.8584, 2.2945), ['eiffel', 'paris']); // the Eiffel Tower is in the donut's hole
    assert.deepEqual(ids(index, 48.5, 2.5), ['donut']);
    assert.deepEqual(ids(index, -17, 179.95), ['dateline', 'fiji']);
    assert.deepEqual(ids(index, -17, -179.95), ['dateline', 'fiji']);
    assert.deepEqual(ids(index, -17, 180), ['dateline', 'fiji']);
    assert.deepEqual(ids(index, -17, -180), ['dateline', 'fiji']);
    assert.deepEqual(ids(index, 89.9, 180), ['north-pole']);
    assert.deepEqual(ids(index, 0, 0), []);
  });

  it('treats lon 180 and -180 as one meridian', () => {
    const index = GeofenceIndex.build<Fence>([
      fence('west-of-line', [], { geometry: { type: 'Polygon', coordinates: [square(175, 30, 180, 35)] } }),
      fence('east-of-line', [], { geometry: { type: 'Polygon', coordinates: [square(-180, 40, -175, 45)] } }),
    ]);
    assert.deepEqual([ids(index, 32, 180), ids(index, 32, -180), ids(index, 32, -179.9)], [['west-of-line'], ['west-of-line'], []]);
    assert.deepEqual([ids(index, 42, -180), ids(index, 42, 180), ids(index, 42, 179.9)], [['east-of-line'], ['east-of-line'], []]);
  });

  it('filters by tags: a geofence must have every given tag', () => {
    const index = GeofenceIndex.build<Fence>(fences());
    assert.deepEqual(ids(index, 48.8584, 2.2945, ['fr']), ['eiffel', 'paris']);
    assert.deepEqual(ids(index, 48.8584, 2.2945, ['fr', 'site']), ['eiffel']);
    assert.deepEqual(ids(index, 48.8584, 2.2945, ['site', 'city']), []);
    assert.deepEqual(ids(index, -17, -179.95, ['sea']), ['dateline']);
    assert.deepEqual(ids(index, -17, -179.95, []), ['dateline', 'fiji']);
  });

  it('removes and replaces geofences', () => {
    const index = GeofenceIndex.build<Fence>(fences());
    assert.equal(index.remove('fiji'), true);
    assert.equal(index.remove('fiji'), false);
    assert.equal(index.size, 5);
    assert.deepEqual(ids(index, -17, -179.95), ['dateline']);
    assert.deepEqual(ids(index, -18.1416, 178.4415), []);
    index.insert(fence('dateline', ['fj'], { circle: { lat: 0, lon: 0, radius: 1000 } })); // moved
    assert.equal(index.size, 5);
    assert.deepEqual(ids(index, -17, -179.95), []);
    assert.deepEqual(ids(index, 0, 0), ['dateline']);
    index.insert(fence('fiji', ['fj'], { geometry: { type: 'Polygon', coordinates: [square(170, -20, 190, -10)] } }));
    assert.deepEqual(ids(index, -17, -179.95), ['fiji']);
  });

  it('follows a track into and out of geofences (a ship sailing east past Fiji)', () => {
    const index = GeofenceIndex.build<Fence>(fences());
    const track: Array<[number, number, string[]]> = [
      [-17, 175, []],
      [-17, 177.5, ['fiji']],
      [-17, 179.6, ['dateline', 'fiji']],
      [-17, -179.8, ['dateline', 'fiji']],
      [-17, -178.5, ['fiji']],
      [-17, -177.5, []],
      [-15.5, -179.9, []], // north of Fiji, outside the 50 km circle (166 km from its centre)
    ];
    assert.deepEqual(
      track.map(([lat, lon]) => ids(index, lat, lon)),
      track.map(([, , expected]) => expected),
    );
  });

  it('agrees with testing every geofence, for many fences and points', () => {
    // A fixed pseudo-random sequence (a linear congruential generator), so a failure can be replayed.
    let seed = 12345;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const all = Array.from({ length: 2000 }, (_, i) => {
      const lat = -80 + random() * 160;
      const lon = -180 + random() * 360;
      if (i % 2 === 0) return fence(`c${i}`, [], { circle: { lat, lon, radius: 1000 + random() * 400_000 } });
      const size = 0.1 + random() * 5;
      return fence(`p${i}`, [], { geometry: { type: 'Polygon', coordinates: [square(lon, lat, lon + size, lat + size)] } });
    });
    const index = GeofenceIndex.build<Fence>(all);
    let hits = 0;
    for (let n = 0; n < 2000; n++) {
      const lat = -85 + random() * 170;
      const lon = -180 + random() * 360;
      const expected = all.filter((f) => containsPoint(f.shape, lat, lon)).map((f) => f.id).sort();
      hits += expected.length;
      assert.deepEqual(ids(index, lat, lon), expected, `${lat}, ${lon}`);
    }
    assert.ok(hits > 100, `only ${hits} hits: the comparison says little`);
  });
});
