import type { OpenCellIdRadio, RadioType } from './geolocation-input.js';

/** A cell or access point of the request found in a database: where it is and how far it is heard. */
export interface LocationMatch {
  readonly lat: number;
  readonly lon: number;
  /** Metres from lat/lon within which the device hears it. */
  readonly range: number;
  /** dBm, as the device measured it. */
  readonly signalStrength?: number;
  readonly timingAdvance?: number;
  readonly kind: 'cell' | 'wifi';
  /** A cell's radio, either vocabulary, any case (`gsm`, `LTE`, `UMTS` …): GSM and LTE let a timing advance narrow the range. */
  readonly radio?: RadioType | OpenCellIdRadio | (string & {});
}

export interface PositionEstimate {
  readonly lat: number;
  readonly lon: number;
  /** Metres: a radius around lat/lon the device is believed to be in. */
  readonly accuracy: number;
}

/** Earth's mean radius (IUGG), metres. */
const EARTH_RADIUS = 6_371_008.8;

/**
 * One timing advance step as a one-way distance. GSM (3GPP TS 45.010 5.5): a step is one bit period, 48/13 µs of
 * round trip → 553.5 m. LTE (3GPP TS 36.213 4.2.3): a step is 16·Ts, Ts = 1/30.72 MHz, 0.52 µs of round trip →
 * 78.12 m. NR is left out: its step depends on the subcarrier spacing (TS 38.213 4.2), which a request does not
 * carry; WCDMA and CDMA report no timing advance.
 */
const TIMING_ADVANCE_STEP_M: Readonly<Record<string, number>> = { gsm: 553.5, lte: 78.12 };

/** Ranges below these are taken as these: a range of 0 in a database would otherwise outweigh everything. */
const MIN_RANGE_M = { cell: 100, wifi: 10 } as const;

/**
 * Outlier test: a match is dropped when, for most of the others, the gap between its circle and theirs
 * (distance minus both ranges) is over this. Wi-Fi reaches a few hundred metres, so an access point 1 km clear
 * of the others has moved; cells' ranges are rough estimates, so they get more slack.
 */
const OUTLIER_GAP_M = { cell: 10_000, wifi: 1_000 } as const;

/** The signal strength of an ordinary reading: it weighs 1. */
const TYPICAL_SIGNAL_DBM = { cell: -90, wifi: -75 } as const;

/** A reading weighs at most this many times more (or less) than an ordinary one (±20 dB). */
const MAX_SIGNAL_FACTOR = 10;

interface Weighed {
  readonly match: LocationMatch;
  readonly vector: readonly [number, number, number];
  readonly range: number;
  readonly weight: number;
}

/**
 * Where the device is, from the cells and access points of its request that were found.
 *
 * - Ranges: at least 100 m (cells) / 10 m (Wi-Fi); a GSM or LTE timing advance TA narrows a cell's range to
 *   (TA + 1) steps (553.5 m / 78.12 m) when that is smaller.
 * - Outliers: with 3 or more matches of a kind, a match whose circle is more than 10 km (cells) / 1 km (Wi-Fi)
 *   clear of the lower median of the others' circles is dropped (a moved access point, a relocated cell).
 * - Wi-Fi first: 2 or more access points → Wi-Fi alone. One access point is combined with the cells when its
 *   circle meets theirs, and ignored when it does not (it has probably moved); alone, it is used.
 * - Weight of a match: f / range², f = 10^((dBm − typical) / 20), typical −90 dBm for cells, −75 for Wi-Fi, f
 *   kept within 0.1…10, 1 when the signal is unknown. (Log-distance path loss with exponent 4: 20 dB stronger ≈
 *   3.2× closer ≈ 10× the weight under 1/d².)
 * - Position: the weighted mean of the matches' unit vectors, projected back onto the sphere, so matches either
 *   side of the antimeridian average to it, not to longitude 0.
 * - Accuracy: max(min over matches of (dᵢ + rᵢ), √(Σ wᵢdᵢ² / Σ wᵢ)), dᵢ the distance from the estimate to a
 *   match. The first term is the smallest circle around the estimate holding a whole match circle (the device
 *   is in every circle if they are right); the second widens it when the matches disagree. A single match
 *   gives its own position and range.
 *
 * @returns undefined when no match has a usable position
 * @example estimatePosition([{ kind: 'cell', lat: 52.5186, lon: 13.3761, range: 1500 }]) // → { lat: 52.5186, lon: 13.3761, accuracy: 1500 }
 */
export function estimatePosition(matches: readonly LocationMatch[]): PositionEstimate | undefined {
  const usable = matches.filter((m) => Number.isFinite(m.lat) && Number.isFinite(m.lon) && Math.abs(m.lat) <= 90 && Number.isFinite(m.range) && m.range >= 0).map(weigh);
  const cells = withoutOutliers(usable.filter((m) => m.match.kind === 'cell'), OUTLIER_GAP_M.cell);
  const wifi = withoutOutliers(usable.filter((m) => m.match.kind === 'wifi'), OUTLIER_GAP_M.wifi);

  if (wifi.length >= 2) return combine(wifi);
  const [accessPoint] = wifi;
  if (!accessPoint) return combine(cells);
  const fromCells = combine(cells);
  if (!fromCells) return combine(wifi);
  const apart = distance(accessPoint.vector, toVector(fromCells.lat, fromCells.lon));
  return apart <= fromCells.accuracy + accessPoint.range ? combine([...cells, accessPoint]) : fromCells;
}

function weigh(match: LocationMatch): Weighed {
  let range = Math.max(match.range, MIN_RANGE_M[match.kind]);
  const step = match.kind === 'cell' && match.radio !== undefined ? TIMING_ADVANCE_STEP_M[match.radio.toLowerCase()] : undefined;
  if (step !== undefined && match.timingAdvance !== undefined && match.timingAdvance >= 0) {
    range = Math.max(Math.min(range, (match.timingAdvance + 1) * step), MIN_RANGE_M.cell);
  }
  let factor = 1;
  if (match.signalStrength !== undefined && Number.isFinite(match.signalStrength)) {
    factor = 10 ** ((match.signalStrength - TYPICAL_SIGNAL_DBM[match.kind]) / 20);
    factor = Math.min(MAX_SIGNAL_FACTOR, Math.max(1 / MAX_SIGNAL_FACTOR, factor));
  }
  return { match, vector: toVector(match.lat, match.lon), range, weight: factor / (range * range) };
}

/** Drops matches far clear of most others; only with 3 or more (with 2, neither can be told wrong). */
function withoutOutliers(matches: readonly Weighed[], maxGap: number): readonly Weighed[] {
  if (matches.length < 3) return matches;
  return matches.filter((one) => {
    const gaps = matches.filter((other) => other !== one).map((other) => distance(one.vector, other.vector) - one.range - other.range);
    gaps.sort((a, b) => a - b);
    // The lower median: with 2 others, the nearer one; an outlier among 3 is far from both.
    const median = gaps[Math.floor((gaps.length - 1) / 2)] ?? 0;
    return median <= maxGap;
  });
}

function combine(matches: readonly Weighed[]): PositionEstimate | undefined {
  if (matches.length === 0) return undefined;
  let x = 0;
  let y = 0;
  let z = 0;
  let total = 0;
  for (const { vector, weight } of matches) {
    x += weight * vector[0];
    y += weight * vector[1];
    z += weight * vector[2];
    total += weight;
  }
  const norm = Math.hypot(x, y, z);
  // Matches cancelling out (antipodes) have no mean: take the heaviest.
  const heaviest = matches.reduce((a, b) => (b.weight > a.weight ? b : a));
  const centre: readonly [number, number, number] = norm > 1e-12 ? [x / norm, y / norm, z / norm] : heaviest.vector;

  let tightest = Number.POSITIVE_INFINITY;
  let spread = 0;
  for (const { vector, range, weight } of matches) {
    const d = distance(centre, vector);
    tightest = Math.min(tightest, d + range);
    spread += weight * d * d;
  }
  // Whole metres up, but not for rounding noise (a lone 1500 m cell stays 1500, not 1501).
  const accuracy = Math.ceil(Math.max(tightest, Math.sqrt(spread / total)) - 1e-6);
  const [lat, lon] = toLatLon(centre);
  // 7 decimals ≈ 1 cm: digits past that are float noise.
  return { lat: round7(lat), lon: round7(lon), accuracy };
}

function round7(degrees: number): number {
  return Math.round(degrees * 1e7) / 1e7;
}

function toVector(lat: number, lon: number): [number, number, number] {
  const phi = (lat * Math.PI) / 180;
  const lambda = (lon * Math.PI) / 180;
  return [Math.cos(phi) * Math.cos(lambda), Math.cos(phi) * Math.sin(lambda), Math.sin(phi)];
}

function toLatLon([x, y, z]: readonly [number, number, number]): [number, number] {
  return [(Math.atan2(z, Math.hypot(x, y)) * 180) / Math.PI, (Math.atan2(y, x) * 180) / Math.PI];
}

/** Great-circle distance between unit vectors, metres (atan2 form: exact for short and long distances). */
function distance(a: readonly [number, number, number], b: readonly [number, number, number]): number {
  const cross = Math.hypot(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
  const dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  return EARTH_RADIUS * Math.atan2(cross, dot);
}
