import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { Accounts } from '../domain/accounts.js';
import type { Scope } from '../domain/scope.js';
import type { Tokens } from '../domain/tokens.js';
import { AppError } from '../errors.js';
import { INTERNAL_CALL_HEADER, type InternalCalls } from './internal-calls.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account this request acts in and who acts; set for every route not marked `config.public`. */
    scope: Scope;
  }
  interface FastifyContextConfig {
    /** The route needs no token (health, login, documentation). */
    public?: boolean;
    /**
     * The token may also come as the query parameter `access_token` (same form as after `Bearer `), for
     * clients that cannot send headers (the browser's EventSource). Only `GET /events/stream`: URLs end up in
     * proxy logs and browser history, so nowhere else.
     */
    tokenInQuery?: boolean;
  }
}

/** `<AT:|UT:><secret>[:<accountId>]`: the token, and the sub-account to act in if any (SPEC "Authentication" 4). */
const BEARER = /^Bearer ((?:AT|UT):[A-Za-z0-9_-]+)(?::([A-Za-z0-9_-]+))?$/;

export function parseBearer(header: string | undefined): { token: string; accountId: string | undefined } {
  if (!header) throw new AppError('IOTB_AUTH_TOKEN_MISSING');
  const match = BEARER.exec(header.trim());
  if (!match?.[1]) throw new AppError('IOTB_AUTH_TOKEN_INVALID', 'The Authorization header must be "Bearer <AT:…|UT:…>[:<accountId>]"');
  return { token: match[1], accountId: match[2] };
}

/** `?access_token=` as an Authorization header, on routes that accept it; the header comes first. */
function queryToken(request: FastifyRequest): string | undefined {
  if (!request.routeOptions.config.tokenInQuery) return undefined;
  const token = (request.query as Record<string, unknown> | undefined)?.access_token;
  return typeof token === 'string' && token !== '' ? `Bearer ${token}` : undefined;
}

/** Authenticates every non-public request and sets `request.scope`. */
export const authPlugin = fp<{ tokens: Tokens; accounts: Accounts; internalCalls: InternalCalls }>(
  async (app: FastifyInstance, { tokens, accounts, internalCalls }) => {
    app.decorateRequest('scope', null as unknown as Scope);
    /** The request's scope: at once for a token verified recently acting in its own account, else once looked up. */
    const scopeOf = (request: FastifyRequest): Scope | Promise<Scope> => {
      const internal = request.headers[INTERNAL_CALL_HEADER];
      if (typeof internal === 'string') {
        const scope = internalCalls.take(internal);
        if (!scope) throw new AppError('IOTB_AUTH_TOKEN_INVALID');
        return scope;
      }
      const { token, accountId } = parseBearer(request.headers.authorization ?? queryToken(request));
      const recalled = accountId === undefined ? tokens.recall(token) : undefined;
      if (recalled) return accounts.ownScope(recalled);
      return tokens.authenticate(token).then((principal) => accounts.scopeFor(principal, accountId));
    };
    // A callback hook: most requests are answered from the token cache, and need not pay for a promise.
    app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
      if (request.routeOptions.config.public) return done();
      let scope: Scope | Promise<Scope>;
      try {
        scope = scopeOf(request);
      } catch (error) {
        return done(error as Error);
      }
      if (!(scope instanceof Promise)) {
        request.scope = scope;
        return done();
      }
      scope.then((found) => {
        request.scope = found;
        done();
      }, done);
    });
  },
  { name: 'iotbridge-auth' },
);
