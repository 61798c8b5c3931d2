import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { runDraft } from '../../triggers/draft-run.js';
import type { TriggerEngine } from '../../triggers/engine.js';
import { namespaceCatalog } from '../../triggers/namespace-catalog.js';
import { ERROR_RESPONSES, EventPost, Execution, IdParams, List, PageQuery, Trigger, TriggerWrite } from '../schemas.js';

const NamespaceFunction = Type.Object({
  name: Type.String(),
  signature: Type.Union([Type.String(), Type.Null()], { description: 'e.g. endpoint.get(endpoint), from the doc comment kept beside the function; null when it has none' }),
  description: Type.Union([Type.String(), Type.Null()], { description: 'What the doc comment says after the signature, e.g. "→ the endpoint or null."' }),
});

const ScriptNamespace = Type.Object({
  name: Type.String(),
  runsIn: Type.Enum(['service', 'sandbox', 'both'], { description: 'service: answered by the service as the trigger\'s account; sandbox: pure functions answered in the script worker' }),
  functions: Type.Array(NamespaceFunction),
});

const DraftRunBody = Type.Object(
  {
    trigger: TriggerWrite,
    event: EventPost,
    triggerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A trigger of the acting account this definition is an edit of: the execution is recorded against it' })),
  },
  { additionalProperties: false },
);

const DraftRunResult = Type.Object({
  execution: Execution,
  replied: Type.Boolean({ description: 'The script called trigger.reply(data)' }),
  reply: Type.Unknown({ description: 'What it replied; null when it did not' }),
});

export const triggerRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; engine: TriggerEngine }> = async (app, { domain, engine }) => {
  const { triggers } = domain;

  app.get(
    '/triggers',
    { schema: { tags: ['triggers'], summary: 'Triggers of the acting account', querystring: Type.Object(PageQuery), response: { 200: List(Trigger), ...ERROR_RESPONSES } } },
    async (request) => triggers.list(request.scope, pageRequest(request.query.limit, request.query.offset)),
  );

  app.get(
    '/triggers/namespaces',
    {
      schema: {
        tags: ['triggers'],
        summary: 'Every namespace a trigger script can call and its functions, with their signatures where documented',
        response: { 200: Type.Object({ items: Type.Array(ScriptNamespace) }), ...ERROR_RESPONSES },
      },
    },
    async () => ({ items: await namespaceCatalog(engine.namespaces) }),
  );

  app.post(
    '/triggers/run',
    {
      schema: {
        tags: ['triggers'],
        summary: 'Test-run a trigger definition that need not be saved against the event in the body; recorded as a test execution',
        body: DraftRunBody,
        response: { 200: DraftRunResult, ...ERROR_RESPONSES },
      },
    },
    async (request) => runDraft({ domain, engine }, request.scope, request.body),
  );

  app.post(
    '/triggers',
    { schema: { tags: ['triggers'], summary: 'Create a trigger', body: TriggerWrite, response: { 201: Trigger, ...ERROR_RESPONSES } } },
    async (request, reply) => reply.status(201).send(await triggers.create(request.scope, request.body)),
  );

  app.get(
    '/triggers/:id',
    { schema: { tags: ['triggers'], summary: 'One trigger', params: IdParams, response: { 200: Trigger, ...ERROR_RESPONSES } } },
    async (request) => triggers.get(request.scope, request.params.id),
  );

  app.put(
    '/triggers/:id',
    { schema: { tags: ['triggers'], summary: 'Replace a trigger (its version grows)', params: IdParams, body: TriggerWrite, response: { 200: Trigger, ...ERROR_RESPONSES } } },
    async (request) => triggers.replace(request.scope, request.params.id, request.body),
  );

  app.delete(
    '/triggers/:id',
    { schema: { tags: ['triggers'], summary: 'Delete a trigger', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await triggers.delete(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/triggers/:id/run',
    {
      schema: {
        tags: ['triggers'],
        summary: 'Test-run a trigger against the event in the body, now, whatever its event types, filters or enabled flag; the execution is recorded with test=true',
        params: IdParams,
        body: EventPost,
        response: { 200: Execution, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const trigger = await triggers.get(request.scope, request.params.id);
      return engine.run(trigger, await domain.events.build(request.scope, request.body), true);
    },
  );

  app.get(
    '/executions',
    {
      schema: {
        tags: ['triggers'],
        summary: 'Trigger executions of the acting account, newest first',
        querystring: Type.Object({
          ...PageQuery,
          triggerId: Type.Optional(Type.String({ maxLength: 64 })),
          eventId: Type.Optional(Type.String({ maxLength: 64 })),
          status: Type.Optional(Type.Enum(['success', 'failed'])),
        }),
        response: { 200: List(Execution), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { limit, offset, ...filter } = request.query;
      return domain.executions.list(request.scope, filter, pageRequest(limit, offset));
    },
  );
};
