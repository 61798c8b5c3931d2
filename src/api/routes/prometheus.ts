import type { FastifyPluginAsync } from 'fastify';
import { AppError } from '../../errors.js';
import type { ServiceMetrics } from '../../observability/service-metrics.js';

/** `GET /metrics`: the operator's Prometheus exposition, for Super-Admin tokens (another port serves it without a token). */
export const prometheusRoutes: FastifyPluginAsync<{ metrics: ServiceMetrics }> = async (app, { metrics }) => {
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['system'],
        summary: 'The service’s metrics in the Prometheus text format (Super-Admin; or IOTBRIDGE_PROMETHEUS_PORT without a token)',
        response: { 200: { description: 'Prometheus text format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    async (request, reply) => {
      if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'The service’s metrics are for Super-Admin tokens');
      const { contentType, text } = await metrics.exposition();
      return reply.header('content-type', contentType).send(text);
    },
  );
};
