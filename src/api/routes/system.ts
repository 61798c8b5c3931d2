import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';

/** Liveness/readiness. The HTTP server listens only once storage is migrated, so reaching it means ready. */
export const systemRoutes: FastifyPluginAsyncTypebox<{ isReady: () => boolean }> = async (app, { isReady }) => {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        tags: ['system'],
        summary: 'Readiness: 200 once the service is ready, 503 while stopping',
        response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: Type.Object({ status: Type.Literal('stopping') }) },
      },
    },
    async (_request, reply) => (isReady() ? { status: 'ok' as const } : reply.status(503).send({ status: 'stopping' as const })),
  );
};
