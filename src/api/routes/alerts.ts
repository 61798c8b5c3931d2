import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { MINUTES_MAX, MINUTES_MIN } from '../../alerts/alert-conditions.js';
import { ALERT_STATES, SEVERITIES, THRESHOLD_OPS } from '../../alerts/model.js';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { ERROR_RESPONSES, IdParams, List, PageQuery, Tag, Timestamp } from '../schemas.js';

const Severity = Type.Enum([...SEVERITIES]);
const Tags = Type.Array(Tag, { maxItems: 50 });

const Minutes = Type.Number({ minimum: MINUTES_MIN, maximum: MINUTES_MAX, description: 'How long, in minutes (fractions allowed)' });
const EndpointTags = Type.Array(Tag, { maxItems: 10, description: 'Endpoints having every one of these tags ("name" or "name:value")' });

const Condition = Type.Union([
  Type.Object(
    {
      type: Type.Literal('threshold'),
      event: Type.String({ minLength: 1, maxLength: 100, description: 'The event type the rule watches' }),
      field: Type.String({ minLength: 1, maxLength: 200, description: 'A dotted path into the event: data.temperature' }),
      op: Type.Enum([...THRESHOLD_OPS]),
      value: Type.Union([Type.Number(), Type.String({ maxLength: 1000 }), Type.Boolean()]),
    },
    { additionalProperties: false, title: 'threshold', description: 'An event of `event` whose `field` crosses `op value`; closes when an event no longer crosses' },
  ),
  Type.Object(
    { type: Type.Literal('unavailable'), minutes: Minutes, tags: Type.Optional(EndpointTags) },
    { additionalProperties: false, title: 'unavailable', description: 'Endpoints that are unavailable and were not heard from for `minutes`; one alert per endpoint' },
  ),
  Type.Object(
    { type: Type.Literal('no-data'), minutes: Minutes, tags: Type.Array(Tag, { minItems: 1, maxItems: 10, description: 'Endpoints having every one of these tags' }) },
    { additionalProperties: false, title: 'no-data', description: 'Endpoints with the tags that were not heard from for `minutes`, whatever their state; one alert per endpoint' },
  ),
  Type.Object(
    {
      type: Type.Literal('trigger-failures'),
      minutes: Minutes,
      percent: Type.Number({ exclusiveMinimum: 0, maximum: 100, description: 'The share of failed runs that raises the alert' }),
      minRuns: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Fewer runs in the period never raise it (default 1)' })),
      triggerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'One trigger; absent: all the account\'s triggers together' })),
    },
    { additionalProperties: false, title: 'trigger-failures', description: 'The share of failed trigger runs over the last `minutes`' },
  ),
]);

const RuleBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    severity: Severity,
    tags: Type.Optional(Tags),
    condition: Condition,
    notify: Type.Optional(
      Type.Object(
        {
          email: Type.Optional(Type.Array(Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' }), { maxItems: 20 })),
          webhook: Type.Optional(
            Type.Object(
              {
                url: Type.String({ minLength: 1, maxLength: 2000 }),
                secret: Type.String({ maxLength: 500, description: 'Write-only: signs every call (x-iotbridge-signature); left empty on PUT keeps the stored one' }),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);

const Rule = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  name: Type.String(),
  severity: Severity,
  tags: Type.Array(Type.String()),
  condition: Condition,
  notify: Type.Object({ email: Type.Optional(Type.Array(Type.String())), webhook: Type.Optional(Type.Object({ url: Type.String(), hasSecret: Type.Boolean() })) }),
  enabled: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const Alert = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  ruleId: Type.Union([Type.String(), Type.Null()]),
  name: Type.String(),
  severity: Severity,
  tags: Type.Array(Type.String()),
  endpointId: Type.Union([Type.String(), Type.Null()]),
  endpointKey: Type.Union([Type.String(), Type.Null()]),
  state: Type.Enum([...ALERT_STATES]),
  value: Type.Unknown(),
  occurrences: Type.Integer(),
  openedAt: Timestamp,
  updatedAt: Timestamp,
  closedAt: Type.Union([Timestamp, Type.Null()]),
  history: Type.Array(Type.Object({ state: Type.Enum([...ALERT_STATES]), at: Timestamp, by: Type.String(), note: Type.Optional(Type.String()) })),
});

/** Alert rules and alerts (docs/reports-alerts.md "Alerts"). */
export const alertRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { alertRules, alerts } = domain;

  app.get(
    '/alert-rules',
    { schema: { tags: ['alerts'], summary: 'Alert rules of the account', querystring: Type.Object({ tag: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'Repeatable; every one' })) }), response: { 200: Type.Object({ items: Type.Array(Rule) }), ...ERROR_RESPONSES } } },
    async (request) => ({ items: await alertRules.list(request.scope, { tags: request.query.tag }) }),
  );
  app.post('/alert-rules', { schema: { tags: ['alerts'], summary: 'Create an alert rule', body: RuleBody, response: { 201: Rule, ...ERROR_RESPONSES } } }, async (request, reply) =>
    reply.status(201).send(await alertRules.create(request.scope, request.body)),
  );
  app.get('/alert-rules/:id', { schema: { tags: ['alerts'], summary: 'One alert rule', params: IdParams, response: { 200: Rule, ...ERROR_RESPONSES } } }, async (request) => alertRules.get(request.scope, request.params.id));
  app.put('/alert-rules/:id', { schema: { tags: ['alerts'], summary: 'Replace an alert rule', params: IdParams, body: RuleBody, response: { 200: Rule, ...ERROR_RESPONSES } } }, async (request) =>
    alertRules.replace(request.scope, request.params.id, request.body),
  );
  app.delete('/alert-rules/:id', { schema: { tags: ['alerts'], summary: 'Delete an alert rule (its alerts stay)', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } }, async (request, reply) => {
    await alertRules.delete(request.scope, request.params.id);
    return reply.status(204).send(null);
  });

  app.get(
    '/alerts',
    {
      schema: {
        tags: ['alerts'],
        summary: 'Alerts of the account, newest first',
        querystring: Type.Object({
          ...PageQuery,
          tag: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'Repeatable; every one' })),
          state: Type.Optional(Type.Array(Type.Enum([...ALERT_STATES]), { description: 'Repeatable; any of them' })),
          severity: Type.Optional(Type.Array(Severity, { description: 'Repeatable; any of them' })),
          endpoint: Type.Optional(Type.String({ maxLength: 300, description: 'Endpoint id or k.<key>' })),
          ruleId: Type.Optional(Type.String({ maxLength: 64 })),
        }),
        response: { 200: List(Alert), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { tag, state, severity, endpoint, ruleId, limit, offset } = request.query;
      const endpointId = endpoint === undefined ? undefined : (await domain.endpoints.get(request.scope, endpoint)).id;
      return alerts.list(request.scope, { tags: tag, states: state, severities: severity, endpointId, ruleId }, pageRequest(limit, offset));
    },
  );
  app.get('/alerts/:id', { schema: { tags: ['alerts'], summary: 'One alert with its history', params: IdParams, response: { 200: Alert, ...ERROR_RESPONSES } } }, async (request) => alerts.get(request.scope, request.params.id));
  app.patch(
    '/alerts/:id',
    {
      schema: {
        tags: ['alerts'],
        summary: 'Acknowledge or close an alert',
        params: IdParams,
        body: Type.Object({ state: Type.Enum(['acknowledged', 'closed']), note: Type.Optional(Type.String({ maxLength: 1000 })) }, { additionalProperties: false }),
        response: { 200: Alert, ...ERROR_RESPONSES },
      },
    },
    async (request) => alerts.changeState(request.scope, request.params.id, request.body.state, request.body.note),
  );
};
