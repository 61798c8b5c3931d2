import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import type { TokenKind } from '../../domain/scope.js';
import { ERROR_RESPONSES, IdParams, IssuedToken, List, PageQuery, TokenCreate, TokenInfo } from '../schemas.js';

export const tokenRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { tokens } = domain;

  app.get(
    '/tokens',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Tokens of the acting account (never their secrets)',
        querystring: Type.Object({
          ...PageQuery,
          type: Type.Optional(Type.Array(Type.Union([Type.Literal('api'), Type.Literal('app'), Type.Literal('user')]), { description: 'Repeatable; default api and app' })),
        }),
        response: { 200: List(TokenInfo), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const kinds: TokenKind[] = request.query.type ?? ['api', 'app'];
      return tokens.list(request.scope, kinds, pageRequest(request.query.limit, request.query.offset));
    },
  );

  app.post(
    '/tokens',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Issue an API or app token for the acting account; the secret is in this answer only',
        body: TokenCreate,
        response: { 201: IssuedToken, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => reply.status(201).send(await tokens.create(request.scope, request.body)),
  );

  app.get(
    '/tokens/:id',
    { schema: { tags: ['tokens'], summary: 'One token of the acting account', params: IdParams, response: { 200: TokenInfo, ...ERROR_RESPONSES } } },
    async (request) => tokens.get(request.scope, request.params.id),
  );

  app.delete(
    '/tokens/:id',
    {
      schema: { tags: ['tokens'], summary: 'Revoke a token of the acting account', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } },
    },
    async (request, reply) => {
      await tokens.revoke(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );
};
