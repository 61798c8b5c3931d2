// The one location call openapi-fetch does not make: the CSV import, whose body is the file's raw bytes
// (streamed by the service into the database), sent with fetch and the session's Authorization header.
import { ApiError, bearer, type ErrorBody } from '../api/client';
import { href } from '../router/hash-location';
import type { Credentials } from '../session/credentials';
import type { ImportFormat, ImportStatus } from './location-types';

function isErrorBody(value: unknown): value is ErrorBody {
  const error = (value as { error?: { message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

/**
 * `POST /location/services/{id}/import?format=&replace=` with `file` as the text/csv body, as the session's
 * credentials (the `:<accountId>` suffix included). A non-2xx answer throws an {@link ApiError} with the API's message.
 */
export async function importCsv(credentials: Credentials, serviceId: string, file: Blob, format: ImportFormat, replace: boolean): Promise<ImportStatus> {
  const query = new URLSearchParams({ format, replace: String(replace) });
  let response: Response;
  try {
    response = await fetch(`${window.location.origin}/location/services/${encodeURIComponent(serviceId)}/import?${query.toString()}`, {
      method: 'POST',
      headers: { authorization: bearer(credentials.token, credentials.accountId), 'content-type': 'text/csv' },
      body: file,
    });
  } catch (error) {
    throw new ApiError(0, undefined, `The service could not be reached: ${error instanceof Error ? error.message : String(error)}`);
  }
  const body: unknown = await response.json().catch(() => undefined);
  if (response.ok) return body as ImportStatus;
  if (isErrorBody(body)) throw new ApiError(response.status, body.error.code, body.error.message);
  throw new ApiError(response.status, undefined, `The service answered ${response.status} ${response.statusText}`.trim());
}

/** What the map page's URL holds: the list's name filter and page, and the geofence being edited. */
export interface MapQuery {
  readonly q: string;
  readonly offset: number;
  readonly edit: string | undefined;
}

export function readMapQuery(search: URLSearchParams): MapQuery {
  const offset = Number(search.get('offset') ?? 0);
  return { q: search.get('q') ?? '', offset: Number.isInteger(offset) && offset > 0 ? offset : 0, edit: search.get('edit') ?? undefined };
}

/** `#/map?q=…&offset=…&edit=…`: empty values are left out. */
export function mapHref(query: Partial<MapQuery> = {}): string {
  return href('/map', { q: query.q, offset: query.offset === 0 ? undefined : query.offset, edit: query.edit });
}
