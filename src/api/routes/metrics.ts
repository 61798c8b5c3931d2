import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { DISTRIBUTION_FIELDS, DISTRIBUTION_MAX_LIMIT } from '../../domain/metrics.js';
import { ERROR_RESPONSES } from '../schemas.js';

/** Counts for dashboards: cheap on large accounts (grouped counts on indexes, never rows). */
export const metricsRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  app.get(
    '/metrics/distribution',
    {
      schema: {
        tags: ['metrics'],
        summary: 'How many endpoints of the acting account have each value of a field, the most frequent first',
        description:
          `Fields: ${DISTRIBUTION_FIELDS.map((field) => `\`${field}\``).join(', ')} (the service's type), \`statusDetails.<name>\`. ` +
          'Counts the acting account\'s own endpoints, not its sub-accounts\'. state, serviceId, protocol and tags are read from ' +
          'indexes alone; a status detail reads each endpoint row of the account once.',
        querystring: Type.Object({
          field: Type.String({ minLength: 1, maxLength: 300, description: 'state | serviceId | protocol | tags | statusDetails.<name>' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: DISTRIBUTION_MAX_LIMIT, default: 100, description: 'The most values returned' })),
        }),
        response: {
          200: Type.Object({
            values: Type.Array(
              Type.Object({
                value: Type.Unknown({ description: 'A value of the field: text, or the status detail\'s JSON value' }),
                count: Type.Integer(),
              }),
            ),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => domain.metrics.distribution(request.scope, request.query.field, request.query.limit),
  );

  app.get(
    '/metrics/executions',
    {
      schema: {
        tags: ['metrics'],
        summary: 'How many trigger runs of the acting account started in a period, and how many of them failed',
        description: 'Reads only the period\'s execution records (their range is found by bisecting the log by time).',
        querystring: Type.Object({
          from: Type.String({ format: 'date-time', description: 'Inclusive' }),
          to: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive; default now' })),
          triggerId: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: {
          200: Type.Object({
            from: Type.String({ format: 'date-time' }),
            to: Type.String({ format: 'date-time' }),
            runs: Type.Integer(),
            failed: Type.Integer(),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { from, to, triggerId } = request.query;
      const counts = await domain.metrics.executions(request.scope, { from: Date.parse(from), to: to === undefined ? Date.now() : Date.parse(to), triggerId });
      return { ...counts, from: new Date(counts.from).toISOString(), to: new Date(counts.to).toISOString() };
    },
  );
};
