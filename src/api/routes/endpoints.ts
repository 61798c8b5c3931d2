import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { ENDPOINT_STATES, type EndpointFilter, type EndpointState } from '../../domain/endpoints.js';
import { pageRequest } from '../../domain/pagination.js';
import { FrozenJson } from '../frozen-json.js';
import {
  Endpoint,
  EndpointBulkCreate,
  EndpointBulkCreated,
  EndpointBulkUpdate,
  EndpointCredentials,
  EndpointCreate,
  EndpointCreated,
  EndpointCredentialsWrite,
  GeneratedCredentials,
  EndpointFilterQuery,
  EndpointPatch,
  EndpointRefParams,
  EndpointRefQuery,
  EndpointWrite,
  ERROR_RESPONSES,
  List,
  PageQuery,
  StorageParams,
  StoredObject,
} from '../schemas.js';

/** A bulk update's filter: a parameter it does not know (`tags` for `tag`) is refused, not ignored into "all". */
const BulkFilterQuery = Type.Object(EndpointFilterQuery, { additionalProperties: false });

/** Searches and counts also filter by state (a bulk update does not: the state changes with the devices). */
const StateQuery = {
  state: Type.Optional(Type.Enum([...ENDPOINT_STATES], { description: 'Only endpoints in this state: `connected` or `unavailable`' })),
};

function toFilter(query: Static<typeof BulkFilterQuery> & { readonly state?: EndpointState | undefined }): EndpointFilter {
  return {
    state: query.state,
    serviceId: query.serviceId,
    tags: query.tag,
    keyPrefix: query.keyPrefix,
    hasStatusDetail: query.hasStatusDetail,
    missingStatusDetail: query.missingStatusDetail,
  };
}

export const endpointRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { endpoints, credentials, provisioning } = domain;
  // The read of one endpoint is the API's most frequent call (dashboards, integrations polling a fleet).
  const endpointJson = new FrozenJson();

  app.get(
    '/endpoints',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Search the endpoints of the acting account',
        querystring: Type.Object({
          ...PageQuery,
          ...EndpointFilterQuery,
          ...StateQuery,
          sort: Type.Optional(Type.Union([Type.Literal('key'), Type.Literal('createdAt'), Type.Literal('updatedAt')], { default: 'key' })),
        }),
        response: { 200: List(Endpoint), ...ERROR_RESPONSES },
      },
    },
    async (request) => endpoints.list(request.scope, toFilter(request.query), pageRequest(request.query.limit, request.query.offset), request.query.sort),
  );

  app.post(
    '/endpoints',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Create an endpoint in a service of the acting account; with "credentials", its device password too (a generated one is answered once)',
        body: EndpointCreate,
        response: { 201: EndpointCreated, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const created = await provisioning.create(request.scope, request.body);
      // A generated secret is shown in this answer only: no cache may keep it.
      if (created.credentials?.password !== undefined) void reply.header('cache-control', 'no-store');
      return reply.status(201).send(created);
    },
  );

  app.post(
    '/endpoints/bulk',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Create many endpoints, each with optional credentials; every item is tried and reported on its own (200 even when some fail)',
        body: EndpointBulkCreate,
        response: { 200: EndpointBulkCreated, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const items = await provisioning.createMany(request.scope, request.body.items);
      const created = items.filter((item) => item.status === 201).length;
      if (items.some((item) => 'endpoint' in item && item.endpoint.credentials?.password !== undefined)) void reply.header('cache-control', 'no-store');
      return { created, failed: items.length - created, items };
    },
  );

  app.patch(
    '/endpoints',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Bulk update: set secondsBeforeMissing and add/remove tags on every endpoint matching the filter (no filter: all; an unknown filter parameter: 400)',
        querystring: BulkFilterQuery,
        body: EndpointBulkUpdate,
        response: { 200: Type.Object({ updated: Type.Integer() }), ...ERROR_RESPONSES },
      },
    },
    async (request) => endpoints.bulkUpdate(request.scope, toFilter(request.query), request.body),
  );

  app.get(
    '/endpoint/count',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'How many endpoints of the acting account match; total=true adds all endpoints of the account and its sub-accounts',
        querystring: Type.Object({ ...EndpointFilterQuery, ...StateQuery, total: Type.Optional(Type.Boolean({ default: false })) }),
        response: { 200: Type.Object({ count: Type.Integer(), total: Type.Optional(Type.Integer()) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => endpoints.count(request.scope, toFilter(request.query), { total: request.query.total ?? false }),
  );

  app.get(
    '/endpoints/:ref',
    {
      schema: { tags: ['endpoints'], summary: 'One endpoint, by id or k.<key>', params: EndpointRefParams, querystring: EndpointRefQuery, response: { 200: Endpoint, ...ERROR_RESPONSES } },
    },
    async (request, reply) => endpointJson.answer(reply, await endpoints.get(request.scope, request.params.ref, request.query.serviceId)),
  );

  app.put(
    '/endpoints/:ref',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Replace an endpoint: fields left out are emptied',
        params: EndpointRefParams,
        body: EndpointWrite,
        response: { 200: Endpoint, ...ERROR_RESPONSES },
      },
    },
    async (request) => endpoints.replace(request.scope, request.params.ref, request.body),
  );

  app.patch(
    '/endpoints/:ref',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Change some fields; statusDetails and parameters merge (RFC 7396, null removes a key)',
        params: EndpointRefParams,
        body: EndpointPatch,
        response: { 200: Endpoint, ...ERROR_RESPONSES },
      },
    },
    async (request) => endpoints.patch(request.scope, request.params.ref, request.body),
  );

  app.delete(
    '/endpoints/:ref',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Delete an endpoint with its storage',
        params: EndpointRefParams,
        querystring: EndpointRefQuery,
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await endpoints.delete(request.scope, request.params.ref, request.query.serviceId);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/endpoints/:ref/storage',
    {
      schema: {
        tags: ['endpoint storage'],
        summary: 'Names of the objects stored for an endpoint',
        params: EndpointRefParams,
        querystring: EndpointRefQuery,
        response: { 200: Type.Object({ items: Type.Array(Type.Object({ name: Type.String(), updatedAt: Type.String({ format: 'date-time' }) })) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ items: await endpoints.storageList(request.scope, request.params.ref, request.query.serviceId) }),
  );

  app.get(
    '/endpoints/:ref/storage/:name',
    {
      schema: {
        tags: ['endpoint storage'],
        summary: 'One stored object; 404 IOTB_ENDPOINT_STORAGE_NOT_FOUND when there is none',
        params: StorageParams,
        querystring: EndpointRefQuery,
        response: { 200: StoredObject, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { ref, name } = request.params;
      return { name, ...(await endpoints.storageGet(request.scope, ref, name, request.query.serviceId)) };
    },
  );

  app.put(
    '/endpoints/:ref/storage/:name',
    {
      schema: {
        tags: ['endpoint storage'],
        summary: 'Store any JSON value under a name (replaces what was there)',
        params: StorageParams,
        querystring: EndpointRefQuery,
        body: Type.Unknown({ description: 'Any JSON value' }),
        response: { 200: StoredObject, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { ref, name } = request.params;
      return { name, ...(await endpoints.storagePut(request.scope, ref, name, request.body, request.query.serviceId)) };
    },
  );

  app.delete(
    '/endpoints/:ref/storage/:name',
    {
      schema: {
        tags: ['endpoint storage'],
        summary: 'Delete a stored object',
        params: StorageParams,
        querystring: EndpointRefQuery,
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await endpoints.storageDelete(request.scope, request.params.ref, request.params.name, request.query.serviceId);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/endpoints/:ref/credentials',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Whether the device has a log-in password (MQTT) and when it was set; never the password',
        params: EndpointRefParams,
        querystring: EndpointRefQuery,
        response: { 200: EndpointCredentials, ...ERROR_RESPONSES },
      },
    },
    async (request) => credentials.get(request.scope, request.params.ref, request.query.serviceId),
  );

  app.put(
    '/endpoints/:ref/credentials',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Set or replace the device log-in password (MQTT: username = endpoint key): {"password"} answers 204, {"generate": true} answers 200 with the generated secret, once',
        params: EndpointRefParams,
        querystring: EndpointRefQuery,
        body: EndpointCredentialsWrite,
        response: { 200: GeneratedCredentials, 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { password } = await credentials.set(request.scope, request.params.ref, request.body, request.query.serviceId);
      // A generated secret is shown in this answer only: no cache may keep it.
      if (password !== undefined) return reply.header('cache-control', 'no-store').status(200).send({ password });
      return reply.status(204).send(null);
    },
  );

  app.delete(
    '/endpoints/:ref/credentials',
    {
      schema: {
        tags: ['endpoints'],
        summary: 'Remove the device log-in password (204 also when none was set)',
        params: EndpointRefParams,
        querystring: EndpointRefQuery,
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await credentials.delete(request.scope, request.params.ref, request.query.serviceId);
      return reply.status(204).send(null);
    },
  );
};
