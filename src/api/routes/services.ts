import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { ERROR_RESPONSES, IdParams, List, PageQuery, Service, ServiceType, ServiceWrite } from '../schemas.js';
import type { ServiceTypeInfo } from '../service-types.js';

export const serviceRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; serviceTypes: readonly ServiceTypeInfo[] }> = async (app, { domain, serviceTypes }) => {
  const { services } = domain;

  app.get(
    '/services',
    {
      schema: {
        tags: ['services'],
        summary: 'Services of the acting account (or of the sub-account named in the bearer token)',
        querystring: Type.Object({ ...PageQuery, type: Type.Optional(ServiceType) }),
        response: { 200: List(Service), ...ERROR_RESPONSES },
      },
    },
    async (request) => services.list(request.scope, { type: request.query.type }, pageRequest(request.query.limit, request.query.offset)),
  );

  app.post(
    '/services',
    { schema: { tags: ['services'], summary: 'Create a service', body: ServiceWrite, response: { 201: Service, ...ERROR_RESPONSES } } },
    async (request, reply) => reply.status(201).send(await services.create(request.scope, request.body)),
  );

  app.get(
    '/services/types',
    {
      schema: {
        tags: ['services'],
        summary: "The service types and the JSON Schema of each type's options",
        description:
          'What a form or a tool offers per type: each option with its type, limits, default and description. POST and PUT /services check the same options (unknown ones are kept as given).',
        querystring: Type.Object({ type: Type.Optional(ServiceType) }),
        response: {
          200: Type.Object({
            items: Type.Array(
              Type.Object({
                type: ServiceType,
                description: Type.String(),
                options: Type.Object({}, { additionalProperties: true, description: "JSON Schema of the type's options" }),
              }),
            ),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => ({ items: serviceTypes.filter((info) => request.query.type === undefined || info.type === request.query.type) }),
  );

  app.get(
    '/services/:id',
    { schema: { tags: ['services'], summary: 'One service', params: IdParams, response: { 200: Service, ...ERROR_RESPONSES } } },
    async (request) => services.get(request.scope, request.params.id),
  );

  app.put(
    '/services/:id',
    {
      schema: {
        tags: ['services'],
        summary: 'Replace a service: options left out return to their defaults',
        params: IdParams,
        body: ServiceWrite,
        response: { 200: Service, ...ERROR_RESPONSES },
      },
    },
    async (request) => services.replace(request.scope, request.params.id, request.body),
  );

  app.delete(
    '/services/:id',
    {
      schema: {
        tags: ['services'],
        summary: 'Delete a service; 409 while it has endpoints unless cascade=true',
        params: IdParams,
        querystring: Type.Object({ cascade: Type.Optional(Type.Boolean({ default: false, description: 'Also delete its endpoints' })) }),
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await services.delete(request.scope, request.params.id, { cascade: request.query.cascade ?? false });
      return reply.status(204).send(null);
    },
  );
};
