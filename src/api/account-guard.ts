import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { SuperAdmin } from '../admin/super-admin.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Why the guard refuses the request, if it does. */
function refusal(request: FastifyRequest, admin: SuperAdmin): AppError | undefined {
  const scope = request.scope as Scope | null;
  if (!scope) return undefined;
  const { principal } = scope;
  if (!READS.has(request.method) && !principal.superAdmin && !request.routeOptions.url?.startsWith('/auth/')) {
    if (admin.suspension.isSuspended(scope.accountId) || admin.suspension.isSuspended(principal.accountId)) return new AppError('IOTB_ACCOUNT_SUSPENDED');
  }
  if (request.method === 'POST' && request.routeOptions.url === '/events' && !admin.limits.admitEvents(scope.accountId)) {
    admin.limits.noteRefused(scope.accountId, 'api');
    return new AppError('IOTB_ACCOUNT_EVENT_RATE', undefined, { eventsPerSecond: admin.limits.get(scope.accountId).eventsPerSecond });
  }
  return undefined;
}

/**
 * What a Super-Admin's suspension and limits mean for API calls, checked once the caller is known: a suspended
 * account's tokens (and any token acting in it) may only read — so its users still see their data and can take it
 * out — while Super-Admins stay free to act in it (the operator fixes and posts test events); and `POST /events`
 * over the account's `eventsPerSecond` is answered 429.
 */
export const accountGuardPlugin = fp<{ admin: SuperAdmin }>(
  async (app: FastifyInstance, { admin }) => {
    // A callback hook, not an async one: it never waits, and every request would pay a promise for it.
    app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      done(refusal(request, admin));
    });
  },
  { name: 'iotbridge-account-guard', dependencies: ['iotbridge-auth'] },
);
