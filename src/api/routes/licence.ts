import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { AppError } from '../../errors.js';
import { LICENCE_HEADER, type Licence, type LicenceStatus } from '../../licence/licence.js';
import { LICENCE_TEXT_MAX } from '../../licence/licence-text.js';
import { ERROR_RESPONSES, Timestamp } from '../schemas.js';

const TAGS = ['licence'];

const LicenceText = Type.String({ minLength: 1, maxLength: LICENCE_TEXT_MAX, description: 'The licence text: base64url(payload).base64url(signature)' });

const LicenceView = Type.Object({
  required: Type.Boolean({ description: 'Whether this installation needs a licence (IOTBRIDGE_LICENSING)' }),
  state: Type.Enum(['off', 'grace', 'valid', 'expired'], { description: 'expired: events are stored but triggers do not run' }),
  graceEndsAt: Type.Optional(Timestamp),
  reason: Type.Optional(Type.String({ description: 'Why the state is not valid' })),
  licensee: Type.Optional(Type.String({ description: 'Super-Admin only' })),
  expiresAt: Type.Optional(Timestamp),
  issuedAt: Type.Optional(Timestamp),
  id: Type.Optional(Type.String({ description: 'Super-Admin only: the licence id' })),
  limits: Type.Optional(
    Type.Object(
      { maxEndpoints: Type.Optional(Type.Integer({ minimum: 0 })), features: Type.Optional(Type.Array(Type.String())) },
      { description: 'Super-Admin only: what the licence allows' },
    ),
  ),
});

/** Everyone sees whether triggers run and why; the licence's contents (licensee, limits) are the Super-Admin's. */
function view(status: LicenceStatus, superAdmin: boolean): Static<typeof LicenceView> {
  const { licence, ...shown } = status;
  if (!superAdmin || !licence) return shown;
  const { maxEndpoints, features } = licence.limits;
  return {
    ...shown,
    licensee: licence.licensee,
    id: licence.id,
    issuedAt: licence.issuedAt,
    expiresAt: licence.expiresAt,
    limits: { ...(maxEndpoints === undefined ? {} : { maxEndpoints }), ...(features === undefined ? {} : { features: [...features] }) },
  };
}

/** `x-iotbridge-licence: grace; ends=<iso>` or `expired` on every API response, so every client learns of it. */
export function addLicenceHeader(app: FastifyInstance, licence: Licence): void {
  if (!licence.required) return;
  app.addHook('onSend', async (_request, reply) => {
    const header = licence.header();
    if (header !== undefined) void reply.header(LICENCE_HEADER, header);
  });
}

/** The private-instance licence (docs/admin.md "Licence"): its state for everyone, installing one for the Super-Admin. */
export const licenceRoutes: FastifyPluginAsyncTypebox<{ licence: Licence }> = async (app, { licence }) => {
  app.get(
    '/licence',
    {
      schema: {
        tags: TAGS,
        summary: 'The licence state (off, grace, valid, expired) and why; the licensee and limits for a Super-Admin',
        response: { 200: LicenceView, ...ERROR_RESPONSES },
      },
    },
    async (request) => view(licence.status(), request.scope.principal.superAdmin),
  );

  app.put(
    '/licence',
    {
      schema: {
        tags: TAGS,
        summary: 'Install a licence (Super-Admin): the text as text/plain, or {"licence": "…"}',
        consumes: ['text/plain', 'application/json'],
        body: Type.Union([LicenceText, Type.Object({ licence: LicenceText }, { additionalProperties: false })]),
        response: { 200: LicenceView, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
      const text = typeof request.body === 'string' ? request.body : request.body.licence;
      return view(await licence.install(text), true);
    },
  );
};
