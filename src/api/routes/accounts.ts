import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { Account, AccountCreate, AccountUpdate, ERROR_RESPONSES, List, PageQuery } from '../schemas.js';

const AccountParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 64 }) });

export const accountRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { accounts } = domain;

  app.get(
    '/accounts',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Sub-accounts of the acting account',
        querystring: Type.Object({
          ...PageQuery,
          descendants: Type.Optional(Type.Boolean({ default: false, description: 'All descendants instead of direct children' })),
        }),
        response: { 200: List(Account), ...ERROR_RESPONSES },
      },
    },
    async (request) =>
      accounts.list(request.scope, { descendants: request.query.descendants ?? false }, pageRequest(request.query.limit, request.query.offset)),
  );

  app.post(
    '/accounts',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Create a sub-account of the acting account (or of parentId, within reach)',
        body: AccountCreate,
        response: { 201: Account, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => reply.status(201).send(await accounts.create(request.scope, request.body)),
  );

  app.get(
    '/accounts/:accountId',
    {
      schema: { tags: ['accounts'], summary: 'The acting account or one of its descendants', params: AccountParams, response: { 200: Account, ...ERROR_RESPONSES } },
    },
    async (request) => accounts.get(request.scope, request.params.accountId),
  );

  app.put(
    '/accounts/:accountId',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Change the name or the externalRefs of an account',
        params: AccountParams,
        body: AccountUpdate,
        response: { 200: Account, ...ERROR_RESPONSES },
      },
    },
    async (request) => accounts.update(request.scope, request.params.accountId, request.body),
  );

  app.delete(
    '/accounts/:accountId',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Delete a sub-account; 409 while it owns data unless cascade=true',
        params: AccountParams,
        querystring: Type.Object({ cascade: Type.Optional(Type.Boolean({ default: false, description: 'Also delete its sub-accounts, services, endpoints, users and tokens' })) }),
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await accounts.delete(request.scope, request.params.accountId, { cascade: request.query.cascade ?? false });
      // Tokens of deleted accounts are gone from the database; drop any this node still trusts.
      domain.tokens.forgetAll();
      return reply.status(204).send(null);
    },
  );
};
