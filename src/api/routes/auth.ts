import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { ERROR_RESPONSES, ErrorBody, IssuedToken, Login } from '../schemas.js';

export const authRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  app.post(
    '/auth/login',
    {
      config: { public: true },
      schema: {
        tags: ['auth'],
        summary: 'Sign in with email, password and optionally accountId; returns a UT: user token with an expiry',
        body: Login,
        response: { 200: IssuedToken, 400: ERROR_RESPONSES[400], 401: ERROR_RESPONSES[401], 429: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => domain.users.login(request.body.email, request.body.password, request.ip, request.body.accountId),
  );

  app.post(
    '/auth/logout',
    {
      schema: {
        tags: ['auth'],
        summary: 'Revoke the UT: user token this request carries',
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      await domain.users.logout(request.scope.principal);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/auth/whoami',
    {
      schema: {
        tags: ['auth'],
        summary: 'The account this request acts in and the token it carries',
        response: {
          200: Type.Object({
            accountId: Type.String(),
            tokenAccountId: Type.String(),
            tokenId: Type.String(),
            type: Type.String(),
            superAdmin: Type.Boolean(),
            userId: Type.Union([Type.String(), Type.Null()]),
            impersonatedBy: Type.Optional(Type.String({ description: 'A support token a Super-Admin issued (POST /super/impersonate): who issued it' })),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { accountId, principal } = request.scope;
      return {
        accountId,
        tokenAccountId: principal.accountId,
        tokenId: principal.tokenId,
        type: principal.kind,
        superAdmin: principal.superAdmin,
        userId: principal.userId,
        ...(principal.impersonatedBy === undefined ? {} : { impersonatedBy: principal.impersonatedBy }),
      };
    },
  );
};
