import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { PAGE_DEFAULT_LIMIT, PAGE_MAX_LIMIT } from '../../domain/pagination.js';
import { EVENT_STREAM_REPLAY_MAX } from '../../events/event-streams.js';
import { HISTORY_COUNTS_MAX_BUCKETS } from '../../events/history.js';
import { ERROR_RESPONSES, ErrorBody, Event, EventPost, IdParams, PostedEvent } from '../schemas.js';
import { SSE_KEEP_ALIVE_MS, SSE_RETRY_MS, SseConnection } from '../sse.js';

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
    '/history/counts',
    {
      schema: {
        tags: ['events'],
        summary: 'How many events of the history fall in each interval of a period (events per minute for a chart), with the filters of GET /history',
        description:
          `Every interval from \`from\` through \`to\` is listed, empty ones too; at most ${HISTORY_COUNTS_MAX_BUCKETS} (400 beyond). ` +
          'Reads only the period\'s events (their range of the history is found by bisecting it by time), never their data.',
        querystring: Type.Object({
          type: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { description: 'Repeatable: any of these types' })),
          endpoint: Type.Optional(Type.String({ maxLength: 300, description: 'Endpoint id or k.<key>' })),
          serviceId: Type.Optional(Type.String({ maxLength: 64 })),
          from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive; default an hour before `to`' })),
          to: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive; default now' })),
          interval: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400, default: 60, description: 'Seconds per bucket' })),
        }),
        response: {
          200: Type.Object({
            from: Type.String({ format: 'date-time' }),
            to: Type.String({ format: 'date-time' }),
            interval: Type.Integer({ description: 'Seconds per bucket' }),
            buckets: Type.Array(Type.Object({ time: Type.String({ format: 'date-time', description: 'Start of the interval' }), count: Type.Integer() })),
            total: Type.Integer(),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { type, interval, ...search } = request.query;
      const to = search.to ?? new Date().toISOString();
      const from = search.from ?? new Date(Date.parse(to) - 3_600_000).toISOString();
      return domain.history.counts(request.scope, { ...search, types: type, from, to }, interval ?? 60);
    },
  );

  app.get(
    '/history/:id',
    { schema: { tags: ['events'], summary: 'One event of the history', params: IdParams, response: { 200: Event, ...ERROR_RESPONSES } } },
    async (request) => domain.history.get(request.scope, request.params.id),
  );

  // Open streams end before the server closes: it would wait for them otherwise.
  const streams = new Set<SseConnection>();
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    await Promise.all([...streams].map((connection) => connection.shutdown()));
  });

  app.get(
    '/events/stream',
    {
      config: { tokenInQuery: true },
      schema: {
        tags: ['events'],
        summary: 'Live events of the acting account as Server-Sent Events (text/event-stream), optionally after replaying the history since an event',
        description:
          `Each event is a message \`event: event\`, \`id: <event id>\`, \`data: <the event as GET /history gives it>\`. ` +
          `With \`since\` or \`Last-Event-ID\` the matching events after that one come first (at most ${EVENT_STREAM_REPLAY_MAX}, ` +
          'the newest; a `gap` message first says when there were more), then live ones, none twice and none missing. ' +
          `A comment every ${SSE_KEEP_ALIVE_MS / 1000} s, \`retry: ${SSE_RETRY_MS}\`. A client that falls too far behind gets ` +
          '`event: overflow` and the stream ends (reconnect with Last-Event-ID). Errors are answered before the stream starts. ' +
          'EventSource cannot send an Authorization header: pass the token as `access_token` (this route only).',
        querystring: Type.Object({
          endpoint: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { maxItems: 100, description: 'Repeatable: events of any of these endpoints (id or k.<key>)' })),
          type: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, description: 'Repeatable: events of any of these types' })),
          since: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Replay the matching events after this event id first; the Last-Event-ID header wins over it' })),
          access_token: Type.Optional(Type.String({ maxLength: 600, description: 'The token (AT:…|UT:…[:<accountId>]) for clients that cannot send Authorization (EventSource); the header wins over it' })),
        }),
        headers: Type.Object({
          'last-event-id': Type.Optional(Type.String({ maxLength: 64, description: 'Sent by EventSource when it reconnects: as since' })),
        }),
        response: {
          200: {
            description: 'The event stream; it ends when the client falls behind (event: overflow) or the service stops',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...ERROR_RESPONSES,
          429: ErrorBody,
          503: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      const { endpoint, type, since } = request.query;
      const lastEventId = request.headers['last-event-id'];
      const stream = await domain.eventStreams.open(request.scope, { endpoints: endpoint, types: type, since: lastEventId || since });
      const connection = new SseConnection(reply, stream, (closed) => streams.delete(closed));
      streams.add(connection);
      // Opened while the server began to close (the stream was being set up).
      if (closing) void connection.shutdown();
      return reply;
    },
  );
};
