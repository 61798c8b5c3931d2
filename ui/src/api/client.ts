// The one way the UI talks to the service: openapi-fetch typed with the types generated from the service's
// OpenAPI document (schema.d.ts, `npm run generate:api`). No API type is written by hand.
import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema';

export type ApiClient = Client<paths>;
export type ErrorBody = components['schemas']['ErrorBody'];

/** The JSON body of a successful GET of `path` (e.g. `ApiData<'/endpoints/{ref}'>`). */
export type ApiData<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer T } } } } } ? T : unknown;

/** The Authorization header: `Bearer <token>`, with `:<accountId>` to act in a sub-account (SPEC "Authentication"). */
export function bearer(token: string, accountId?: string): string {
  return `Bearer ${token}${accountId === undefined ? '' : `:${accountId}`}`;
}

/** A client for this origin; every request carries `token` when given, acting in `accountId` when given. */
export function apiClient(token?: string, accountId?: string): ApiClient {
  return createClient<paths>({
    baseUrl: window.location.origin,
    headers: token === undefined ? {} : { authorization: bearer(token, accountId) },
  });
}

/** A failed call: the API's error code and message, or why the service could not be asked. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;

  constructor(status: number, code: string | undefined, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

function isErrorBody(value: unknown): value is ErrorBody {
  const error = (value as { error?: { message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

interface Result<T> {
  readonly data?: T;
  readonly error?: unknown;
  readonly response: Response;
}

/**
 * Awaits an openapi-fetch call and returns its data; a non-2xx answer throws an {@link ApiError} carrying the
 * API's `error.message`, a network failure one with status 0.
 */
export async function call<T>(request: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await request;
  } catch (error) {
    throw new ApiError(0, undefined, `The service could not be reached: ${error instanceof Error ? error.message : String(error)}`);
  }
  const { response } = result;
  if (!response.ok) {
    if (isErrorBody(result.error)) throw new ApiError(response.status, result.error.error.code, result.error.error.message);
    throw new ApiError(response.status, undefined, `The service answered ${response.status} ${response.statusText}`.trim());
  }
  return result.data as T;
}

/** What to show for a failure: the API's message when it gave one. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
