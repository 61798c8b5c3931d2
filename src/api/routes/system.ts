import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';

/** What a node of a cluster says of itself on `/ready` (docs/cluster.md). */
export interface NodeReadiness {
  readonly node: string;
  /** How many of the event bus's shards this node handles now. */
  readonly shards: number;
  readonly liveNodes: number;
}

const Stopping = Type.Object({ status: Type.Literal('stopping') });

/**
 * Liveness and readiness for load balancers. The HTTP server listens only once storage is migrated and the device
 * listeners are up, so reaching it means ready; both answer 503 from the moment the service begins to stop.
 */
export const systemRoutes: FastifyPluginAsyncTypebox<{ isReady: () => boolean; cluster?: (() => NodeReadiness) | undefined }> = async (app, { isReady, cluster }) => {
  app.get(
    '/health',
    {
      config: { public: true },
      schema: {
        tags: ['system'],
        summary: 'Readiness: 200 once the service is ready, 503 while stopping',
        response: { 200: Type.Object({ status: Type.Literal('ok') }), 503: Stopping },
      },
    },
    async (_request, reply) => (isReady() ? { status: 'ok' as const } : reply.status(503).send({ status: 'stopping' as const })),
  );
  app.get(
    '/ready',
    {
      config: { public: true },
      schema: {
        tags: ['system'],
        summary: 'Readiness for a load balancer: 200 while this node takes traffic, 503 while it drains; in a cluster, its share of the event bus',
        response: {
          200: Type.Object({
            status: Type.Literal('ok'),
            node: Type.Optional(Type.String()),
            shards: Type.Optional(Type.Integer({ description: 'event bus shards this node handles' })),
            liveNodes: Type.Optional(Type.Integer()),
          }),
          503: Stopping,
        },
      },
    },
    async (_request, reply) => (isReady() ? { status: 'ok' as const, ...cluster?.() } : reply.status(503).send({ status: 'stopping' as const })),
  );
};
