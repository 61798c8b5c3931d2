import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Scope } from '../domain/scope.js';
import type { Logs } from '../logs/logs.js';
import { apiErrorEntry, auditEntry, type CallEndpoint } from '../logs/sources.js';

const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Calls that send data or ask something rather than change the account's objects: not audited. */
const NOT_CHANGES = new Set(['POST /events', 'POST /triggers/run', 'POST /triggers/:id/run', 'POST /geofences/eval', 'POST /location/geolocate', 'POST /reports/:ref/entries']);
/** Path parameters that name an object changed, in the order looked for. */
const OBJECT_PARAMS = ['ref', 'id', 'accountId', 'serviceId', 'objectId', 'name'] as const;
/** Response bodies read for the id of an object created, at most (bytes of JSON). */
const BODY_READ_MAX = 65_536;

/**
 * Writes account log entries for the API calls of authenticated callers (`request.scope` set): an `api` entry
 * for each 4xx/5xx answer (method, path without the query, status, error code and message; no bodies), and an
 * `audit` entry for each change that succeeded (POST, PUT, PATCH, DELETE answered 2xx): who made it and the id
 * of what it changed. Calls without an account (a missing or wrong token, sign-in) write nothing; `/super/*` calls
 * are audited by their own routes (src/api/routes/super.ts), in the root account's log.
 */
export const requestLogPlugin = fp<{ logs: Logs }>(
  async (app: FastifyInstance, { logs }) => {
    app.addHook('onSend', (request, reply, payload, done) => {
      try {
        record(logs, request, reply, payload);
      } catch {
        // A log entry is never worth a failed answer.
      }
      done(null, payload);
    });
  },
  { name: 'iotbridge-request-log', dependencies: ['iotbridge-auth'] },
);

function record(logs: Logs, request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
  const scope = request.scope as Scope | null;
  if (!scope) return;
  const status = reply.statusCode;
  if (status >= 400) {
    const error = errorOf(payload);
    logs.write(apiErrorEntry(scope, { method: request.method, path: pathOf(request), status, code: error.code, message: error.message, endpoint: endpointOf(request) }));
    return;
  }
  const route = request.routeOptions.url;
  if (status >= 300 || !CHANGES.has(request.method) || route === undefined || route.startsWith('/auth/') || route.startsWith('/super/') || NOT_CHANGES.has(`${request.method} ${route}`)) return;
  const objectId = objectIdOf(request, payload);
  const endpoint = route === '/endpoints' && request.method === 'POST' ? { endpointId: objectId } : endpointOf(request);
  logs.write(auditEntry(scope, { method: request.method, route, status, objectId, endpoint }));
}

/** The endpoint of `/endpoints/{ref}/…`: its id, or the key of a `k.<key>` reference. */
function endpointOf(request: FastifyRequest): CallEndpoint | undefined {
  if (!request.routeOptions.url?.startsWith('/endpoints/:ref')) return undefined;
  const ref = (request.params as Record<string, unknown> | undefined)?.ref;
  if (typeof ref !== 'string' || ref === '') return undefined;
  return ref.startsWith('k.') ? { endpointKey: ref.slice(2) } : { endpointId: ref };
}

/** The path without the query string (which may carry a token), a download-link token in it left out. */
function pathOf(request: FastifyRequest): string {
  const query = request.url.indexOf('?');
  const path = query === -1 ? request.url : request.url.slice(0, query);
  const token = (request.params as Record<string, unknown> | undefined)?.token;
  return typeof token === 'string' && token !== '' ? path.replace(encodeURIComponent(token), '…') : path;
}

function errorOf(payload: unknown): { code: string; message: string } {
  const body = typeof payload === 'string' && payload.length < BODY_READ_MAX ? parse(payload) : undefined;
  const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  return { code: typeof error?.code === 'string' ? error.code : 'UNKNOWN', message: typeof error?.message === 'string' ? error.message : '' };
}

/** The object a change named in its path, or the one a POST created (its `id` in the answer). */
function objectIdOf(request: FastifyRequest, payload: unknown): string | undefined {
  const params = request.params as Record<string, unknown> | undefined;
  for (const name of OBJECT_PARAMS) {
    const value = params?.[name];
    if (typeof value === 'string' && value !== '') return value;
  }
  if (request.method !== 'POST' || typeof payload !== 'string' || payload.length > BODY_READ_MAX || !payload.startsWith('{')) return undefined;
  const body = parse(payload) as { id?: unknown; accountId?: unknown } | undefined;
  const id = body?.id ?? body?.accountId;
  return typeof id === 'string' ? id : undefined;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
