import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { pageRequest } from '../../domain/pagination.js';
import { EndpointRefParams, ERROR_RESPONSES, IdParams, List, PageQuery, Tag, Tags, Timestamp } from '../schemas.js';

const TAGS = ['geofences'];

const Circle = Type.Object(
  {
    lat: Type.Number({ minimum: -90, maximum: 90 }),
    lon: Type.Number({ minimum: -180, maximum: 180 }),
    radius: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, description: 'Metres' }),
  },
  { additionalProperties: false },
);

/** Checked in full by the domain (closed rings, no self-intersection, coordinates): described, not validated, here. */
const Geometry = Type.Object(
  { type: Type.Enum(['Polygon', 'MultiPolygon']), coordinates: Type.Array(Type.Unknown()) },
  { additionalProperties: true, description: 'GeoJSON Polygon or MultiPolygon, [lon, lat] positions (RFC 7946); see docs/location.md for the antimeridian' },
);

const GeofenceBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
    tags: Type.Optional(Tags),
    geometry: Type.Optional(Geometry),
    circle: Type.Optional(Circle),
  },
  { additionalProperties: false, description: 'Exactly one of geometry and circle' },
);

const Geofence = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  tags: Type.Array(Type.String()),
  geometry: Type.Optional(Type.Object({}, { additionalProperties: true })),
  circle: Type.Optional(Circle),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const Transition = Type.Object({
  transition: Type.Enum(['enter', 'exit', 'inside']),
  geofenceId: Type.String(),
  name: Type.String(),
  tags: Type.Array(Type.String()),
  lat: Type.Number(),
  lon: Type.Number(),
  accuracy: Type.Optional(Type.Number()),
  dwellSeconds: Type.Optional(Type.Integer({ description: 'Seconds since the endpoint entered (exit, inside)' })),
});

const EvalBody = Type.Object(
  {
    endpoint: Type.String({ minLength: 1, maxLength: 300, description: 'Endpoint id or `k.<key>`' }),
    lat: Type.Number(),
    lon: Type.Number(),
    accuracy: Type.Optional(Type.Number({ minimum: 0, description: 'Metres' })),
    tags: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'Only geofences with every one of these tags' })),
    inside: Type.Optional(Type.Boolean({ description: 'Also report (and emit) `inside` for geofences the endpoint stays in' })),
  },
  { additionalProperties: false },
);

const Position = Type.Object({
  endpointId: Type.String(),
  lat: Type.Number(),
  lon: Type.Number(),
  accuracy: Type.Union([Type.Number(), Type.Null()]),
  source: Type.String(),
  at: Timestamp,
});

/** Geofences (`/geofences`), their evaluation, and endpoints' last known positions (docs/location.md). */
export const geofenceRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { geofences, positions } = domain.location;

  app.get(
    '/geofences',
    {
      schema: {
        tags: TAGS,
        summary: 'Geofences of the account, by name',
        querystring: Type.Object({
          ...PageQuery,
          q: Type.Optional(Type.String({ maxLength: 200, description: 'Name prefix, case-insensitive' })),
          tag: Type.Optional(Type.Array(Tag, { maxItems: 20, description: 'Repeatable; every one must be present' })),
        }),
        response: { 200: List(Geofence), ...ERROR_RESPONSES },
      },
    },
    async (request) => geofences.list(request.scope, { q: request.query.q, tags: request.query.tag }, pageRequest(request.query.limit, request.query.offset)),
  );

  app.post(
    '/geofences',
    { schema: { tags: TAGS, summary: 'Create a geofence: a GeoJSON Polygon / MultiPolygon, or a circle', body: GeofenceBody, response: { 201: Geofence, ...ERROR_RESPONSES } } },
    async (request, reply) => reply.status(201).send(await geofences.create(request.scope, request.body)),
  );

  app.post(
    '/geofences/eval',
    {
      schema: {
        tags: TAGS,
        summary: "Evaluate an endpoint's position against the account's geofences",
        description: 'Answers the transitions and emits one `geofence` event per transition, as `geofence.eval` in a script does. The position becomes the endpoint\'s last known one.',
        body: EvalBody,
        response: { 200: Type.Object({ endpointId: Type.String(), endpointKey: Type.String(), transitions: Type.Array(Transition), inside: Type.Array(Type.String()) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { endpoint, lat, lon, accuracy, tags, inside } = request.body;
      return geofences.evaluate(request.scope, endpoint, { lat, lon }, { tags, inside, accuracy, source: 'api' });
    },
  );

  app.get(
    '/geofences/:id',
    { schema: { tags: TAGS, summary: 'One geofence', params: IdParams, response: { 200: Geofence, ...ERROR_RESPONSES } } },
    async (request) => geofences.get(request.scope, request.params.id),
  );

  app.put(
    '/geofences/:id',
    { schema: { tags: TAGS, summary: 'Replace a geofence (endpoints inside keep their entry time)', params: IdParams, body: GeofenceBody, response: { 200: Geofence, ...ERROR_RESPONSES } } },
    async (request) => geofences.replace(request.scope, request.params.id, request.body),
  );

  app.delete(
    '/geofences/:id',
    { schema: { tags: TAGS, summary: 'Delete a geofence', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await geofences.delete(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/location/positions',
    {
      schema: {
        tags: TAGS,
        summary: "Endpoints' last known positions, newest first",
        querystring: Type.Object({
          bbox: Type.Optional(Type.String({ pattern: '^-?[0-9.]+,-?[0-9.]+,-?[0-9.]+,-?[0-9.]+$', description: 'minLon,minLat,maxLon,maxLat (minLon > maxLon crosses the antimeridian)' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 1000 })),
        }),
        response: { 200: Type.Object({ items: Type.Array(Position) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ items: await positions.list(request.scope, { bbox: request.query.bbox, limit: request.query.limit ?? 1000 }) }),
  );

  app.get(
    '/endpoints/:ref/position',
    { schema: { tags: TAGS, summary: "The endpoint's last known position (404 when it has none)", params: EndpointRefParams, response: { 200: Position, ...ERROR_RESPONSES } } },
    async (request) => positions.get(request.scope, request.params.ref),
  );

  app.put(
    '/endpoints/:ref/position',
    {
      schema: {
        tags: TAGS,
        summary: "Set the endpoint's position (without evaluating geofences: POST /geofences/eval does both)",
        params: EndpointRefParams,
        body: Type.Object({ lat: Type.Number(), lon: Type.Number(), accuracy: Type.Optional(Type.Number({ minimum: 0 })) }, { additionalProperties: false }),
        response: { 200: Position, ...ERROR_RESPONSES },
      },
    },
    async (request) => positions.set(request.scope, request.params.ref, request.body, 'api'),
  );
};
