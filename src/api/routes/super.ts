import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { SuperDiagnostics } from '../../admin/diagnostics.js';
import { SLOWEST_MAX } from '../../admin/diagnostics.js';
import type { SuperAdmin } from '../../admin/super-admin.js';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import type { Scope } from '../../domain/scope.js';
import { AppError } from '../../errors.js';
import { Account, ERROR_RESPONSES, List, PageQuery } from '../schemas.js';
import { superActionRoutes } from './super-actions.js';

/** Endpoints `GET /super/endpoints` answers at most (a key is usually one device; old data may share it). */
const FOUND_MAX = 100;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const EndpointLocation = Type.Object({
  id: Type.String(),
  key: Type.String(),
  accountId: Type.String(),
  accountName: Type.String(),
  serviceId: Type.String(),
  serviceName: Type.String(),
  serviceType: Type.String(),
  state: Type.String({ description: 'connected | unavailable' }),
  lastSeen: Nullable(Type.String({ format: 'date-time' })),
});

const EventsView = Type.Object({
  nodeId: Type.String(),
  backlog: Type.Object({ inMemory: Type.Integer({ description: 'Events waiting in memory for their turn' }), inStoreOnly: Type.Boolean({ description: 'Newer events wait in the database only (the in-memory backlog is full)' }) }),
  lag: Type.Object({
    lastSeq: Type.Integer(),
    handledThrough: Type.Integer(),
    pending: Type.Integer({ description: 'Accepted events not yet handled by the trigger engine and the other consumers' }),
    oldestPendingTime: Nullable(Type.Number({ description: 'Epoch ms' })),
    oldestPendingAgeMs: Nullable(Type.Number()),
    cursors: Type.Array(Type.Object({ name: Type.String(), handledThrough: Type.Integer() })),
  }),
});

const Worker = Type.Object({ index: Type.Integer(), pid: Type.Integer(), inFlight: Type.Integer() });
const TriggersView = Type.Object({
  nodeId: Type.String(),
  workers: Type.Object({
    configured: Type.Integer({ description: 'Script worker processes this node may run (IOTBRIDGE_SCRIPT_WORKERS); each starts with its first run' }),
    count: Type.Integer({ description: 'Script worker processes started' }),
    busy: Type.Integer(),
    inFlight: Type.Integer({ description: 'Runs running or waiting in a worker' }),
    each: Type.Array(Worker),
  }),
  recent: Type.Object({
    runs: Type.Integer({ description: 'Executions looked at: the newest ones' }),
    since: Nullable(Type.String({ format: 'date-time' })),
    slowest: Type.Array(
      Type.Object({
        accountId: Type.String(),
        accountName: Nullable(Type.String()),
        triggerId: Type.String(),
        triggerName: Nullable(Type.String()),
        durationMs: Type.Number(),
        status: Type.String(),
        startedAt: Type.String({ format: 'date-time' }),
      }),
    ),
    failures: Type.Array(Type.Object({ accountId: Type.String(), triggerId: Type.String(), triggerName: Nullable(Type.String()), failed: Type.Integer() })),
  }),
});

const DevicesView = Type.Object({
  nodes: Type.Array(
    Type.Object({
      nodeId: Type.String(),
      servers: Type.Record(Type.String(), Type.Integer(), { description: 'Listeners of this node by name, with their ports' }),
      connected: Type.Array(Type.Object({ protocol: Type.String(), count: Type.Integer() })),
    }),
  ),
  suspendedAccounts: Type.Integer(),
});

const StorageView = Type.Object({
  dialect: Type.String(),
  tables: Type.Array(Type.Object({ table: Type.String(), rows: Nullable(Type.Integer()), estimated: Type.Boolean(), bytes: Nullable(Type.Integer()) })),
  retention: Type.Object({ historyDays: Type.Integer(), executionDays: Type.Integer(), logDays: Type.Integer() }),
});

const FindQuery = Type.Object({
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Endpoint key, in any account' })),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Endpoint id' })),
});

/**
 * Platform administration ("Super-Admin"): only tokens and users of the root account with the flag; every call,
 * refused ones too, is audited in the root account's log (who, route, query, the account an action aims at).
 */
export const superRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; admin: SuperAdmin; diagnostics: SuperDiagnostics }> = async (app, { domain, admin, diagnostics }) => {
  app.addHook('preHandler', async (request) => {
    if (!request.scope.principal.superAdmin) throw new AppError('IOTB_AUTH_FORBIDDEN', 'Super-Admin only');
  });
  app.addHook('onResponse', async (request, reply) => {
    const scope = request.scope as Scope | null;
    if (!scope) return;
    const params = request.params as Record<string, unknown> | undefined;
    const body = request.body as Record<string, unknown> | undefined;
    const target = typeof params?.id === 'string' ? params.id : typeof body?.accountId === 'string' ? body.accountId : undefined;
    admin.audit(scope, { method: request.method, route: request.routeOptions.url ?? request.url.split('?')[0]!, query: { ...(request.query as object) }, status: reply.statusCode, targetAccountId: target });
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

  app.get(
    '/super/endpoints',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'Endpoints with this key (or id) in any account, with their account and service (replaces /super/lookup)',
        querystring: FindQuery,
        response: { 200: Type.Object({ items: Type.Array(EndpointLocation) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { key, id } = request.query;
      if ((key === undefined) === (id === undefined)) throw new AppError('IOTB_REQUEST_VALIDATION', 'Give exactly one of ?key= and ?id=');
      return { items: await admin.findEndpoints(key === undefined ? { id: id! } : { key }, FOUND_MAX) };
    },
  );

  app.get(
    '/super/lookup',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'Renamed: answers 308 to /super/endpoints with the same query',
        querystring: FindQuery,
        response: { 308: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const query = request.url.indexOf('?');
      return reply.redirect(`/super/endpoints${query === -1 ? '' : request.url.slice(query)}`, 308);
    },
  );

  app.get(
    '/super/events',
    { schema: { tags: ['super-admin'], summary: 'Event bus backlog and how far its consumers are behind (this node)', response: { 200: EventsView, ...ERROR_RESPONSES } } },
    async () => diagnostics.events(),
  );

  app.get(
    '/super/triggers',
    {
      schema: {
        tags: ['super-admin'],
        summary: 'Script worker pool state, the slowest recent runs and the triggers failing most',
        querystring: Type.Object({ top: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: SLOWEST_MAX })) }),
        response: { 200: TriggersView, ...ERROR_RESPONSES },
      },
    },
    async (request) => diagnostics.triggers(request.query.top),
  );

  app.get(
    '/super/devices',
    { schema: { tags: ['super-admin'], summary: 'Connected devices per protocol and node', response: { 200: DevicesView, ...ERROR_RESPONSES } } },
    async () => diagnostics.devices(),
  );

  app.get(
    '/super/storage',
    { schema: { tags: ['super-admin'], summary: 'Table sizes (estimated cheaply) and the retention in force', response: { 200: StorageView, ...ERROR_RESPONSES } } },
    async () => diagnostics.storage(),
  );

  await app.register(superActionRoutes, { admin });
};
