import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { AppError } from '../../errors.js';
import { Account, ERROR_RESPONSES, List, PageQuery } from '../schemas.js';

/** Platform administration ("Super-Admin"): only tokens and users of the root account with the flag. */
export const superRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  app.addHook('preHandler', async (request) => {
    if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
  });

  app.get(
    '/super/accounts',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'Every account below the one acted in (the whole platform from the root account)',
        querystring: Type.Object(PageQuery),
        response: { 200: List(Account), ...ERROR_RESPONSES },
      },
    },
    async (request) => domain.accounts.list(request.scope, { descendants: true }, pageRequest(request.query.limit, request.query.offset)),
  );
};
