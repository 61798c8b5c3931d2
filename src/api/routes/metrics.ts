import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { CENSUS_OBJECTS, type CensusObject } from '../../domain/field-census.js';
import { STATUS_DEFAULT_LIMIT, STATUS_DEFAULT_WINDOW_MS, STATUS_MAX_LIMIT, STATUS_OBJECTS, STATUS_SORTS, type StatusObject } from '../../domain/health.js';
import { DISTRIBUTION_FIELDS, DISTRIBUTION_MAX_LIMIT } from '../../domain/metrics.js';
import { Endpoint, ERROR_RESPONSES, Service, Timestamp, Trigger } from '../schemas.js';

/** Repeatable (`object=a&object=b`) or comma-separated (`object=a,b`) names out of `names`. */
function ObjectsQuery(names: readonly string[]) {
  const one = names.join('|');
  return Type.Array(Type.String({ pattern: `^(${one})(,(${one}))*$` }), {
    maxItems: 10,
    description: `Only these objects (${names.join(', ')}): repeatable, or comma-separated; default all`,
  });
}

function objectSet<T extends string>(values: readonly string[] | undefined, all: readonly T[]): ReadonlySet<T> {
  return new Set(values === undefined ? all : (values.flatMap((value) => value.split(',')) as T[]));
}

const StatusItem = Type.Object({
  object: Type.Enum([...STATUS_OBJECTS]),
  id: Type.String(),
  name: Type.String({ description: "The trigger's or service's name; the endpoint's key" }),
  state: Type.String({
    description: 'Endpoint: connected | unavailable. Trigger: enabled | disabled | library. Service: idle (no endpoints) | ok (all connected) | degraded (some unavailable) | down (none connected)',
  }),
  lastActivity: Type.Union([Timestamp, Type.Null()], { description: "Endpoint: lastSeenAt; trigger: its newest run's start; service: its endpoints' latest lastSeenAt" }),
  errors: Type.Integer({ description: "In the window: a trigger's failed runs; an endpoint's recorded errors; a service's, its endpoints' errors" }),
  runs: Type.Optional(Type.Integer({ description: 'Triggers: runs started in the window' })),
  serviceId: Type.Optional(Type.String({ description: "Endpoints: their service" })),
  type: Type.Optional(Type.String({ description: "Services: their type" })),
  endpoints: Type.Optional(Type.Object({ connected: Type.Integer(), unavailable: Type.Integer() }, { description: "Services: their endpoints per state" })),
  trigger: Type.Optional(Trigger),
  endpoint: Type.Optional(Endpoint),
  service: Type.Optional(Service),
});

/** Counts and health for dashboards: cheap on large accounts (grouped counts and pages of indexes; field counts from a cache). */
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

  app.get(
    '/metrics/status',
    {
      schema: {
        tags: ['metrics'],
        summary: 'Health per trigger, endpoint and service of the acting account: state, last activity, errors in a window',
        description:
          'Sorted, then cut at `limit`. Triggers and services are read whole; endpoints only as far as the sort needs ' +
          '(the first `limit` from an index, plus those with errors in the window): cheap on accounts of 100,000 endpoints. ' +
          'resolve=true embeds each object as its own GET answers it.',
        querystring: Type.Object({
          object: Type.Optional(ObjectsQuery(STATUS_OBJECTS)),
          sort: Type.Optional(Type.Enum([...STATUS_SORTS], { default: '-errors', description: '-errors: the most errors first, ties by last activity (newest first); never-active objects come last in both activity orders' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: STATUS_MAX_LIMIT, default: STATUS_DEFAULT_LIMIT })),
          since: Type.Optional(Type.String({ format: 'date-time', description: 'Start of the error window; default 24 hours ago' })),
          resolve: Type.Optional(Type.Boolean({ default: false, description: 'Embed the trigger, endpoint or service under its own name' })),
        }),
        response: { 200: Type.Object({ items: Type.Array(StatusItem) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { object, sort, limit, since, resolve } = request.query;
      return domain.metrics.status(request.scope, {
        objects: objectSet<StatusObject>(object, STATUS_OBJECTS),
        sort: sort ?? '-errors',
        limit: limit ?? STATUS_DEFAULT_LIMIT,
        since: since === undefined ? Date.now() - STATUS_DEFAULT_WINDOW_MS : Date.parse(since),
        resolve: resolve ?? false,
      });
    },
  );

  app.get(
    '/metrics/fields',
    {
      schema: {
        tags: ['metrics'],
        summary: "Which user-defined keys the acting account's objects use, and how many objects use each",
        description:
          'Endpoints: statusDetails.<key>, parameters.<key>, storage.<name>, tags.<name>; services: options.<key>; triggers: globals.<name> ' +
          '(top-level keys). Answered from a census kept in memory per account, computed in the background: `computedAt` says when it began; ' +
          'a census older than IOTBRIDGE_METRICS_FIELDS_MAX_AGE_SECONDS (default 60) is answered and refreshed behind the answer.',
        querystring: Type.Object({ object: Type.Optional(ObjectsQuery(CENSUS_OBJECTS)) }),
        response: {
          200: Type.Object({
            items: Type.Array(Type.Object({ object: Type.Enum([...CENSUS_OBJECTS]), field: Type.String(), count: Type.Integer() })),
            computedAt: Timestamp,
            truncated: Type.Boolean({ description: 'The account uses more distinct fields than a census keeps (10,000): some are missing' }),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => domain.metrics.fields(request.scope, request.query.object === undefined ? undefined : objectSet<CensusObject>(request.query.object, CENSUS_OBJECTS)),
  );
};
