import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { PAGE_DEFAULT_LIMIT, PAGE_MAX_LIMIT } from '../../domain/pagination.js';
import { ERROR_RESPONSES, Event, EventPost, IdParams, PostedEvent } from '../schemas.js';

export const eventRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  app.post(
    '/events',
    {
      schema: {
        tags: ['events'],
        summary: 'Post a custom event as the acting account; 202 once it is accepted (durable), triggers then run. With awaitReply, answers once a trigger replied (or the wait timed out).',
        body: EventPost,
        response: { 202: PostedEvent, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { awaitReply, replyTimeoutMs, ...input } = request.body;
      if (!awaitReply) return reply.status(202).send(await domain.events.post(request.scope, input));
      const answered = await domain.events.request(request.scope, input, replyTimeoutMs ?? 5000);
      return reply.status(202).send({ ...answered.event, reply: answered.reply });
    },
  );

  app.get(
    '/history',
    {
      schema: {
        tags: ['events'],
        summary: 'Search the event history, newest first; pass the answer\'s `next` to get older events',
        querystring: Type.Object({
          type: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { description: 'Repeatable: any of these types' })),
          endpoint: Type.Optional(Type.String({ maxLength: 300, description: 'Endpoint id or k.<key>' })),
          serviceId: Type.Optional(Type.String({ maxLength: 64 })),
          from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive' })),
          to: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_MAX_LIMIT, default: PAGE_DEFAULT_LIMIT })),
          next: Type.Optional(Type.String({ maxLength: 200, description: 'Cursor from the previous page' })),
        }),
        response: {
          200: Type.Object({ items: Type.Array(Event), next: Type.Union([Type.String(), Type.Null()]), limit: Type.Integer() }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { next, limit, type, ...search } = request.query;
      return domain.history.search(request.scope, { ...search, types: type }, next, limit);
    },
  );

  app.get(
    '/history/:id',
    { schema: { tags: ['events'], summary: 'One event of the history', params: IdParams, response: { 200: Event, ...ERROR_RESPONSES } } },
    async (request) => domain.history.get(request.scope, request.params.id),
  );
};
