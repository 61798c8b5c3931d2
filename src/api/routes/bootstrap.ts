import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { AppError } from '../../errors.js';
import { BootstrapConfigBody } from '../../lwm2m/bootstrap/config.js';
import { redactBootstrapConfig, type BootstrapConfigs } from '../../lwm2m/bootstrap/configs.js';
import { EndpointRefParams, ERROR_RESPONSES } from '../schemas.js';

const TAGS = ['lwm2m'];

const BootstrapConfigView = Type.Object(
  {
    endpointId: Type.String(),
    source: Type.Enum(['endpoint', 'service'], { description: "endpoint: the endpoint's own configuration; service: its service's option bootstrap (the default)" }),
    updatedAt: Type.Optional(Type.String()),
    config: Type.Record(Type.String(), Type.Unknown(), { description: 'The configuration with its defaults; PSK keys are write-only (pskKeySet: true)' }),
  },
  { description: 'What the LwM2M Bootstrap-Server writes into the device at its Bootstrap-Request' },
);

/** Bootstrap configurations of LwM2M endpoints (docs/lwm2m.md "Bootstrap"). */
export const bootstrapRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; bootstrapConfigs: BootstrapConfigs }> = async (app, { domain, bootstrapConfigs }) => {
  app.put(
    '/endpoints/:ref/bootstrap',
    {
      schema: {
        tags: TAGS,
        summary: "Set the endpoint's bootstrap configuration (replaces its service's default for this endpoint)",
        params: EndpointRefParams,
        body: BootstrapConfigBody,
        response: { 200: BootstrapConfigView, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const stored = await bootstrapConfigs.put(endpoint, request.body);
      return { endpointId: endpoint.id, source: 'endpoint' as const, updatedAt: stored.updatedAt, config: redactBootstrapConfig(stored.config) };
    },
  );

  app.get(
    '/endpoints/:ref/bootstrap',
    {
      schema: {
        tags: TAGS,
        summary: "The endpoint's bootstrap configuration: its own, else its service's default; 404 when neither exists",
        params: EndpointRefParams,
        response: { 200: BootstrapConfigView, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const service = await domain.services.get(request.scope, endpoint.serviceId);
      const effective = await bootstrapConfigs.effective(endpoint, service);
      if (!effective) throw new AppError('IOTB_BOOTSTRAP_CONFIG_NOT_FOUND');
      return { endpointId: endpoint.id, source: effective.source, ...(effective.updatedAt && { updatedAt: effective.updatedAt }), config: redactBootstrapConfig(effective.config) };
    },
  );

  app.delete(
    '/endpoints/:ref/bootstrap',
    {
      schema: {
        tags: TAGS,
        summary: "Remove the endpoint's own bootstrap configuration (its service's default, if any, applies again)",
        params: EndpointRefParams,
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      if (!(await bootstrapConfigs.remove(endpoint))) throw new AppError('IOTB_BOOTSTRAP_CONFIG_NOT_FOUND', 'The endpoint has no bootstrap configuration of its own');
      return reply.status(204).send(null);
    },
  );
};
