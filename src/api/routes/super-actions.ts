import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { IMPERSONATION_DEFAULT_MINUTES, IMPERSONATION_MAX_MINUTES, type SuperAdmin } from '../../admin/super-admin.js';
import { ERROR_RESPONSES, IdParams, IssuedToken } from '../schemas.js';

const Limit = (description: string) =>
  // `nullable`, not a union: the API coerces types, and a union's branches would turn null into 0 or 0 into null.
  Type.Optional(Type.Unsafe<number | null>({ type: 'integer', nullable: true, minimum: 0, maximum: 1_000_000_000, description: `${description}; 0 allows none, null clears it` }));

const Limits = Type.Object({
  maxEndpoints: Type.Union([Type.Integer(), Type.Null()]),
  eventsPerSecond: Type.Union([Type.Integer(), Type.Null()]),
  scriptCpuMsPerMinute: Type.Union([Type.Integer(), Type.Null()]),
});

const AccountStatus = Type.Object({
  accountId: Type.String(),
  name: Type.String(),
  suspended: Type.Boolean(),
  suspension: Type.Union([Type.Object({ at: Type.String({ format: 'date-time' }), reason: Type.String(), by: Type.String() }), Type.Null()]),
  limits: Limits,
  usage: Type.Object(
    {
      droppedDeviceMessages: Type.Integer(),
      refusedApiEvents: Type.Integer(),
      skippedScriptRuns: Type.Integer(),
      scriptCpuMsThisMinute: Type.Integer(),
    },
    { description: 'What the limits refused since this node started' },
  ),
});

/** Super-Admin actions on accounts: suspend/resume, limits, impersonation (hooks and audit come from super.ts). */
export const superActionRoutes: FastifyPluginAsyncTypebox<{ admin: SuperAdmin }> = async (app, { admin }) => {
  app.post(
    '/super/accounts/:id/suspend',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'Suspend an account: its devices are refused, its triggers stop, its tokens may only read (GET)',
        params: IdParams,
        body: Type.Object({ reason: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
        response: { 200: AccountStatus, ...ERROR_RESPONSES },
      },
    },
    async (request) => admin.suspend(request.scope, request.params.id, request.body.reason),
  );

  app.post(
    '/super/accounts/:id/resume',
    {
      schema: { tags: ['super-admin'], summary: 'Resume a suspended account', params: IdParams, response: { 200: AccountStatus, ...ERROR_RESPONSES } },
    },
    async (request) => admin.resume(request.scope, request.params.id),
  );

  app.get(
    '/super/accounts/:id/limits',
    {
      schema: { tags: ['super-admin'], summary: "An account's suspension, limits and what they refused", params: IdParams, response: { 200: AccountStatus, ...ERROR_RESPONSES } },
    },
    async (request) => admin.status(request.scope, request.params.id),
  );

  app.put(
    '/super/accounts/:id/limits',
    {
      schema: {
        tags: ['super-admin'],
        summary: "Set an account's limits: the ones given change, null clears one",
        params: IdParams,
        body: Type.Object(
          {
            maxEndpoints: Limit('Endpoints the account may have'),
            eventsPerSecond: Limit('Events per second from its devices and POST /events (bursts of one second’s worth)'),
            scriptCpuMsPerMinute: Limit('Script time its triggers may use per minute (ms)'),
          },
          { additionalProperties: false },
        ),
        response: { 200: AccountStatus, ...ERROR_RESPONSES },
      },
    },
    async (request) => admin.setLimits(request.scope, request.params.id, request.body),
  );

  app.post(
    '/super/impersonate',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'A short-lived support token acting in an account (as one of its users when userId is given); audited in both accounts',
        body: Type.Object(
          {
            accountId: Type.String({ minLength: 1, maxLength: 64 }),
            userId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
            minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: IMPERSONATION_MAX_MINUTES, default: IMPERSONATION_DEFAULT_MINUTES })),
          },
          { additionalProperties: false },
        ),
        response: { 201: IssuedToken, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => reply.status(201).send(await admin.impersonate(request.scope, request.body)),
  );
};
