import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { ERROR_RESPONSES, IdParams, List, PageQuery, User, UserCreate, UserUpdate } from '../schemas.js';

export const userRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { users } = domain;

  app.get(
    '/users',
    { schema: { tags: ['users'], summary: 'Users of the acting account', querystring: Type.Object(PageQuery), response: { 200: List(User), ...ERROR_RESPONSES } } },
    async (request) => users.list(request.scope, pageRequest(request.query.limit, request.query.offset)),
  );

  app.post(
    '/users',
    { schema: { tags: ['users'], summary: 'Create a user of the acting account', body: UserCreate, response: { 201: User, ...ERROR_RESPONSES } } },
    async (request, reply) => reply.status(201).send(await users.create(request.scope, request.body)),
  );

  app.get(
    '/users/:id',
    { schema: { tags: ['users'], summary: 'One user of the acting account', params: IdParams, response: { 200: User, ...ERROR_RESPONSES } } },
    async (request) => users.get(request.scope, request.params.id),
  );

  app.put(
    '/users/:id',
    {
      schema: { tags: ['users'], summary: 'Change the name or password of a user', params: IdParams, body: UserUpdate, response: { 200: User, ...ERROR_RESPONSES } },
    },
    async (request) => users.update(request.scope, request.params.id, request.body),
  );

  app.delete(
    '/users/:id',
    {
      schema: { tags: ['users'], summary: 'Delete a user and revoke their sessions', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } },
    },
    async (request, reply) => {
      await users.delete(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
