import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { PSK_IDENTITY_MAX_BYTES, PSK_MAX_BYTES, PSK_MIN_BYTES } from '../../domain/device-security.js';
import { EndpointRefParams, ERROR_RESPONSES } from '../schemas.js';

const TAGS = ['endpoints'];

const SecurityBody = Type.Union(
  [
    Type.Object(
      {
        mode: Type.Literal('psk'),
        identity: Type.String({ minLength: 1, maxLength: PSK_IDENTITY_MAX_BYTES, description: 'PSK identity the device presents in its handshake; unique across the service' }),
        key: Type.String({ minLength: 1, maxLength: 256, description: `The pre-shared key, hex or base64, ${PSK_MIN_BYTES} to ${PSK_MAX_BYTES} bytes; write-only` }),
      },
      { additionalProperties: false },
    ),
    Type.Object({ mode: Type.Literal('x509') }, { additionalProperties: false, description: "The device presents a certificate whose CN or SAN is its endpoint name, issued by a CA in its service's trust list" }),
  ],
  { description: 'How the device authenticates over DTLS (docs/dtls.md)' },
);

const SecurityView = Type.Object({
  mode: Type.Enum(['psk', 'x509']),
  identity: Type.Optional(Type.String()),
  keySet: Type.Optional(Type.Boolean({ description: 'A PSK is stored (it is never shown)' })),
  updatedAt: Type.String(),
});

/** DTLS security of an endpoint's device: `PUT | GET | DELETE /endpoints/{ref}/security`. */
export const endpointSecurityRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  app.put(
    '/endpoints/:ref/security',
    { schema: { tags: TAGS, summary: "Set how the endpoint's device authenticates over DTLS (PSK or X.509); keys are write-only", params: EndpointRefParams, body: SecurityBody, response: { 200: SecurityView, ...ERROR_RESPONSES } } },
    async (request) => domain.security.put(request.scope, request.params.ref, request.body),
  );

  app.get(
    '/endpoints/:ref/security',
    { schema: { tags: TAGS, summary: "The endpoint's DTLS security mode and PSK identity (never the key)", params: EndpointRefParams, response: { 200: SecurityView, ...ERROR_RESPONSES } } },
    async (request) => domain.security.get(request.scope, request.params.ref),
  );

  app.delete(
    '/endpoints/:ref/security',
    { schema: { tags: TAGS, summary: "Remove the endpoint's DTLS security (its device can no longer shake hands)", params: EndpointRefParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await domain.security.remove(request.scope, request.params.ref);
      return reply.status(204).send(null);
    },
  );
};
