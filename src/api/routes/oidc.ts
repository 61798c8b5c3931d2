import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError } from '../../errors.js';
import type { OidcSignIn } from '../../oidc/oidc-sign-in.js';
import { ERROR_RESPONSES, ErrorBody, Timestamp, User } from '../schemas.js';

const TAGS = ['auth'];

const Target = Type.Object(
  {
    accountId: Type.String({ minLength: 1, maxLength: 64 }),
    superAdmin: Type.Optional(Type.Boolean({ description: 'Users signing in this way are Super-Admins: only for the root account' })),
  },
  { additionalProperties: false },
);

const Mapping = Type.Object(
  {
    mode: Type.Optional(Type.Union([Type.Literal('domain'), Type.Literal('organization')], { description: 'Default: IOTBRIDGE_OIDC_MODE' })),
    domains: Type.Optional(Type.Record(Type.String(), Target, { description: 'domain mode: e-mail domain (verified e-mail only) → account' })),
    claim: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'organization mode: the claim listing organizations; default groups' })),
    organizations: Type.Optional(Type.Record(Type.String(), Target, { description: 'organization mode: organization → account; the first listed wins when several match' })),
  },
  { additionalProperties: false },
);

const MappingView = Type.Object({
  source: Type.Union([Type.Literal('file'), Type.Literal('api'), Type.Literal('none')], { description: 'file: IOTBRIDGE_OIDC_MAPPING (read-only here)' }),
  mapping: Type.Union([Mapping, Type.Null()]),
  updatedAt: Type.Union([Timestamp, Type.Null()]),
});

const SignedIn = Type.Object({
  token: Type.String({ description: 'The UT: user token; revoke it with POST /auth/logout' }),
  expiresAt: Type.Union([Timestamp, Type.Null()]),
  superAdmin: Type.Boolean({ description: 'What the mapping grants this token' }),
  accountId: Type.String(),
  created: Type.Boolean({ description: 'The user was created by this (first) sign-in' }),
  user: User,
});

/**
 * Binds a sign-in to the browser that started it (login CSRF, leaked callback URLs): random, HttpOnly, sent by
 * the browser on the provider's redirect back (SameSite=Lax allows a top-level GET), gone after 10 minutes.
 * Kept when present and well-formed, so sign-ins started in several tabs all finish.
 */
const BROWSER_COOKIE = 'iotbridge_oidc';
const BROWSER_VALUE = /^[A-Za-z0-9_-]{43}$/;

function browserCookie(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === BROWSER_COOKIE && BROWSER_VALUE.test(value.join('='))) return value.join('=');
  }
  return undefined;
}

function setBrowserCookie(request: FastifyRequest, reply: FastifyReply, value: string): void {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  void reply.header('set-cookie', `${BROWSER_COOKIE}=${value}; Path=/auth/oidc; Max-Age=600; HttpOnly; SameSite=Lax${secure}`);
}

/** A browser (it asks for HTML) is redirected to the UI; an API client that asks for JSON gets JSON. */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** The callback's query as text: a parameter given twice counts once (its first value). */
function textQuery(query: unknown): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const first: unknown = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') result[name] = first;
  }
  return result;
}

/**
 * External sign-in with OpenID Connect (src/oidc/): `GET /auth/oidc` says whether it is on, `/login` sends the
 * browser to the provider, `/callback` turns the provider's answer into a UT: token, `/mapping` is the
 * Super-Admin's. Without configuration every route but `GET /auth/oidc` answers 404 `IOTB_AUTH_OIDC_OFF`.
 */
export const oidcRoutes: FastifyPluginAsyncTypebox<{ oidc: OidcSignIn | undefined }> = async (app, { oidc }) => {
  const configured = (): OidcSignIn => {
    if (!oidc) throw new AppError('IOTB_AUTH_OIDC_OFF');
    return oidc;
  };

  /** A failed sign-in: JSON for API clients, the UI's sign-in page with the code for browsers. */
  const failed = (request: FastifyRequest, reply: FastifyReply, error: unknown) => {
    if (wantsJson(request) || !(error instanceof AppError) || error.code === 'IOTB_AUTH_OIDC_OFF') throw error;
    request.log.info({ code: error.code, reason: error.message }, 'external sign-in refused');
    return reply.header('cache-control', 'no-store').redirect(`/#/sign-in?error=${encodeURIComponent(error.code)}`, 302);
  };

  app.get(
    '/auth/oidc',
    {
      config: { public: true },
      schema: {
        tags: TAGS,
        summary: 'Whether external sign-in (OpenID Connect) is configured, and the label of its sign-in button',
        security: [],
        response: { 200: Type.Object({ enabled: Type.Boolean(), name: Type.Union([Type.String(), Type.Null()]) }) },
      },
    },
    async () => ({ enabled: oidc !== undefined, name: oidc?.name ?? null }),
  );

  app.get(
    '/auth/oidc/login',
    {
      config: { public: true },
      schema: {
        tags: TAGS,
        summary: "Starts an external sign-in: 302 to the provider's authorization endpoint (PKCE S256, state, nonce)",
        security: [],
        querystring: Type.Object({
          account: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'Preferred account when the mapping gives several' })),
          returnTo: Type.Optional(Type.String({ maxLength: 512, description: 'UI path to show after signing in, e.g. /endpoints' })),
        }),
        response: { 302: Type.Null({ description: 'Location: the provider; Set-Cookie: iotbridge_oidc (send it with the callback)' }), 400: ErrorBody, 404: ErrorBody, 502: ErrorBody },
      },
    },
    async (request, reply) => {
      const signIn = configured();
      try {
        const browser = browserCookie(request) ?? randomBytes(32).toString('base64url');
        const url = await signIn.start({
          accountId: request.query.account,
          returnTo: request.query.returnTo,
          defaultRedirectUri: `${request.protocol}://${request.host}/auth/oidc/callback`,
          browser,
        });
        setBrowserCookie(request, reply, browser);
        return await reply.header('cache-control', 'no-store').redirect(url.href, 302);
      } catch (error) {
        return failed(request, reply, error);
      }
    },
  );

  app.get(
    '/auth/oidc/callback',
    {
      config: { public: true },
      schema: {
        tags: TAGS,
        summary: 'Where the provider sends the browser back: 302 to the UI with the UT: token in the fragment, or JSON for Accept: application/json',
        security: [],
        querystring: Type.Object(
          {
            code: Type.Optional(Type.String({ maxLength: 4096 })),
            state: Type.Optional(Type.String({ maxLength: 512 })),
            error: Type.Optional(Type.String({ maxLength: 512 })),
            error_description: Type.Optional(Type.String({ maxLength: 2048 })),
            iss: Type.Optional(Type.String({ maxLength: 2048 })),
          },
          { additionalProperties: true },
        ),
        response: { 200: SignedIn, 302: Type.Null({ description: 'Location: /#/signed-in?token=… or /#/sign-in?error=<code>' }), 400: ErrorBody, 403: ErrorBody, 404: ErrorBody, 502: ErrorBody },
      },
    },
    async (request, reply) => {
      const signIn = configured();
      try {
        const done = await signIn.finish(textQuery(request.query), browserCookie(request));
        request.log.info({ userId: done.user.id, accountId: done.accountId, created: done.created }, 'external sign-in');
        reply.header('cache-control', 'no-store');
        if (wantsJson(request)) {
          return { token: done.token.token, expiresAt: done.token.expiresAt, superAdmin: done.token.superAdmin, accountId: done.accountId, created: done.created, user: done.user };
        }
        // In the fragment: browsers never send it, so the token stays out of every server's and proxy's logs.
        const fragment = new URLSearchParams({ token: done.token.token, ...(done.returnTo === undefined ? {} : { returnTo: done.returnTo }) });
        return await reply.redirect(`/#/signed-in?${fragment.toString()}`, 302);
      } catch (error) {
        return failed(request, reply, error);
      }
    },
  );

  app.get(
    '/auth/oidc/mapping',
    {
      schema: {
        tags: TAGS,
        summary: 'The external sign-in mapping (Super-Admin): from IOTBRIDGE_OIDC_MAPPING or set with PUT',
        response: { 200: MappingView, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
      return configured().getMapping();
    },
  );

  app.put(
    '/auth/oidc/mapping',
    {
      schema: {
        tags: TAGS,
        summary: 'Sets the external sign-in mapping (Super-Admin); 409 while IOTBRIDGE_OIDC_MAPPING provides it',
        body: Mapping,
        response: { 200: MappingView, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
      return configured().setMapping(request.body, request.scope.principal.tokenId);
    },
  );
};
