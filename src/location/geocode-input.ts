import { AppError } from '../errors.js';
import { checkDegrees } from './geodesy.js';

/**
 * Checks of what a caller hands a geocoder (the embedded PlaceIndex or an HTTP provider alike), so both refuse the
 * same inputs with the same messages. Field names are those of GET /location/forward and /location/reverse.
 */

/** Longest forward query accepted, in characters (code points). */
export const MAX_QUERY_LENGTH = 200;
/** Most results one forward or reverse call returns. */
export const MAX_RESULTS = 100;

/**
 * The query without surrounding white space; throws `IOTB_REQUEST_VALIDATION` (field `q`) when it is empty or
 * longer than MAX_QUERY_LENGTH characters.
 */
export function checkQuery(query: string): string {
  const trimmed = typeof query === 'string' ? query.trim() : '';
  if (trimmed === '') throw invalid('q', 'The query q must not be empty');
  if ([...trimmed].length > MAX_QUERY_LENGTH) throw invalid('q', `The query q must be at most ${MAX_QUERY_LENGTH} characters`);
  return trimmed;
}

/**
 * An ISO 3166-1 alpha-2 country code in upper case (`de` → `DE`), or undefined when none is given; throws
 * `IOTB_REQUEST_VALIDATION` (field `country`) for anything but two letters.
 */
export function checkCountry(country: string | undefined): string | undefined {
  if (country === undefined) return undefined;
  if (typeof country !== 'string' || !/^[A-Za-z]{2}$/.test(country)) {
    throw invalid('country', 'The country must be an ISO 3166-1 alpha-2 code such as DE');
  }
  return country.toUpperCase();
}

/**
 * `limit`, or `fallback` when it is undefined; throws `IOTB_REQUEST_VALIDATION` (field `limit`) unless it is an
 * integer from 1 to MAX_RESULTS.
 */
export function checkLimit(limit: number | undefined, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RESULTS) {
    throw invalid('limit', `The limit must be an integer from 1 to ${MAX_RESULTS}`);
  }
  return limit;
}

/** Throws `IOTB_REQUEST_VALIDATION` naming `lat` or `lon` unless lat is in [-90, 90] and lon in [-180, 180] (degrees, WGS 84). */
export function checkCoordinates(lat: number, lon: number): void {
  checkDegrees(lat, -90, 90, 'lat', 'latitude');
  checkDegrees(lon, -180, 180, 'lon', 'longitude');
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
