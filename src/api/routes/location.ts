import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { AppError } from '../../errors.js';
import { LOCATION_SERVICE_TYPES } from '../../location/model.js';
import { ERROR_RESPONSES, ErrorBody, IdParams, Timestamp } from '../schemas.js';

const TAGS = ['location'];
const ServiceType = Type.Enum([...LOCATION_SERVICE_TYPES], { description: 'embedded (imported cell/Wi-Fi positions), google, unwiredlabs (geolocation APIs), nominatim (geocoding)' });
const ApiKey = Type.String({ minLength: 1, maxLength: 500, description: 'Write-only: never returned (hasApiKey says whether one is set)' });
const Url = Type.String({ minLength: 1, maxLength: 2000, description: 'Base URL of an HTTP provider (default: its public API)' });

const ImportStatus = Type.Object({
  state: Type.Enum(['running', 'done', 'failed']),
  format: Type.Enum(['opencellid', 'wifi']),
  rows: Type.Integer(),
  rejected: Type.Integer(),
  bytes: Type.Integer(),
  firstErrors: Type.Array(Type.Object({ line: Type.Integer(), message: Type.String() })),
  startedAt: Timestamp,
  finishedAt: Type.Union([Timestamp, Type.Null()]),
  error: Type.Optional(Type.String()),
});

const LocationService = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  name: Type.String(),
  type: ServiceType,
  position: Type.Integer({ description: 'Fallback order: lower first' }),
  url: Type.Union([Type.String(), Type.Null()]),
  hasApiKey: Type.Boolean(),
  positions: Type.Optional(Type.Object({ cells: Type.Integer(), wifi: Type.Integer() }, { description: 'Embedded: imported positions' })),
  import: Type.Optional(ImportStatus),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const Provider = Type.Object({ id: Type.Union([Type.String(), Type.Null()]), name: Type.String(), type: Type.String() });

/** Places: the embedded ones (GeoNames) and Nominatim's share these fields; each provider adds its own. */
const Place = Type.Object(
  {
    name: Type.String(),
    country: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    lat: Type.Number(),
    lon: Type.Number(),
    distance: Type.Optional(Type.Integer({ description: 'Reverse: metres from the point asked about' })),
    source: Type.String({ description: 'geonames or nominatim' }),
  },
  { additionalProperties: true },
);

const Cell = Type.Object(
  {
    radioType: Type.Optional(Type.String({ description: 'gsm, cdma, wcdma (umts), lte, nr' })),
    mcc: Type.Optional(Type.Integer()),
    mnc: Type.Optional(Type.Integer()),
    lac: Type.Optional(Type.Integer()),
    tac: Type.Optional(Type.Integer()),
    cellId: Type.Optional(Type.Integer()),
    signalStrength: Type.Optional(Type.Number({ description: 'dBm' })),
    timingAdvance: Type.Optional(Type.Integer()),
  },
  { additionalProperties: true },
);

const GeolocateBody = Type.Object(
  {
    cells: Type.Optional(Type.Array(Cell, { description: 'Also as Google-style cellTowers' })),
    wifi: Type.Optional(Type.Array(Type.Object({ macAddress: Type.String(), signalStrength: Type.Optional(Type.Number()) }, { additionalProperties: true }), { description: 'Also as wifiAccessPoints' })),
    ip: Type.Optional(Type.String({ description: "The device's IP address, for HTTP providers that locate addresses" })),
  },
  { additionalProperties: true, description: 'Checked in full by the service (docs/location.md "Geolocation")' },
);

const GeolocateResult = Type.Object({
  lat: Type.Number(),
  lon: Type.Number(),
  accuracy: Type.Number({ description: 'Metres' }),
  source: Type.String({ description: 'cell, wifi, cell+wifi or ip' }),
  provider: Provider,
  matched: Type.Optional(Type.Object({ cells: Type.Integer(), wifi: Type.Integer() })),
  cached: Type.Boolean(),
});

/** `/location/*`: providers, cell/Wi-Fi import, geolocation and geocoding (docs/location.md). */
export const locationRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { services, geolocation, geocoding, usage } = domain.location;

  app.get(
    '/location/services',
    { schema: { tags: TAGS, summary: "The account's location services, in fallback order", response: { 200: Type.Object({ items: Type.Array(LocationService) }), ...ERROR_RESPONSES } } },
    async (request) => ({ items: await services.list(request.scope) }),
  );

  app.post(
    '/location/services',
    {
      schema: {
        tags: TAGS,
        summary: 'Add a location service',
        body: Type.Object(
          { name: Type.String({ minLength: 1, maxLength: 200 }), type: ServiceType, url: Type.Optional(Url), apiKey: Type.Optional(ApiKey), position: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })) },
          { additionalProperties: false },
        ),
        response: { 201: LocationService, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => reply.status(201).send(await services.create(request.scope, request.body)),
  );

  app.get(
    '/location/services/:id',
    { schema: { tags: TAGS, summary: 'One location service; an embedded one with its imported positions and import progress', params: IdParams, response: { 200: LocationService, ...ERROR_RESPONSES } } },
    async (request) => services.get(request.scope, request.params.id),
  );

  app.patch(
    '/location/services/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Change a location service (apiKey null removes the key; left out keeps it)',
        params: IdParams,
        body: Type.Object(
          {
            name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
            url: Type.Optional(Type.Union([Url, Type.Null()])),
            apiKey: Type.Optional(Type.Union([ApiKey, Type.Null()])),
            position: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: LocationService, ...ERROR_RESPONSES },
      },
    },
    async (request) => services.update(request.scope, request.params.id, request.body),
  );

  app.delete(
    '/location/services/:id',
    { schema: { tags: TAGS, summary: 'Delete a location service and its imported positions', params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await services.delete(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );

  // The CSV body streams from the socket into the database in batches: never held whole.
  await app.register(async (child) => {
    const raw = child.withTypeProvider<TypeBoxTypeProvider>();
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', (_request, _payload, done) => done(null));
    raw.post(
      '/location/services/:id/import',
      {
        schema: {
          tags: TAGS,
          summary: 'Import cell positions (OpenCelliD CSV) or Wi-Fi positions (mac,lon,lat,range) into an embedded service',
          description: 'The body is the CSV, streamed (text/csv). A bad row is counted and skipped. Progress shows in GET /location/services/{id} while it runs.',
          params: IdParams,
          querystring: Type.Object({
            format: Type.Optional(Type.Enum(['opencellid', 'wifi'], { default: 'opencellid' })),
            replace: Type.Optional(Type.Boolean({ default: false, description: "Forget the service's earlier positions first" })),
          }),
          body: { content: { 'text/csv': { schema: Type.String({ description: 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal' }) } } },
          response: { 200: ImportStatus, ...ERROR_RESPONSES, 409: ErrorBody },
        },
      },
      async (request) => {
        try {
          return await services.import(request.scope, request.params.id, request.raw, { format: request.query.format ?? 'opencellid', replace: request.query.replace ?? false });
        } catch (error) {
          if (error === request.raw.errored) throw new AppError('IOTB_REQUEST_VALIDATION', 'The request body ended early: the rows read before it are kept');
          throw error;
        }
      },
    );
  });

  app.post(
    '/location/geolocate',
    {
      schema: {
        tags: TAGS,
        summary: 'A position from cell towers, Wi-Fi access points and/or an IP address',
        body: GeolocateBody,
        response: { 200: GeolocateResult, ...ERROR_RESPONSES, 502: ErrorBody },
      },
    },
    async (request) => geolocation.locate(request.scope, request.body),
  );

  app.get(
    '/location/forward',
    {
      schema: {
        tags: TAGS,
        summary: 'Places by name, best first',
        querystring: Type.Object({
          q: Type.String({ maxLength: 1000 }),
          country: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-2' })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
        }),
        response: { 200: Type.Object({ items: Type.Array(Place), provider: Provider }), ...ERROR_RESPONSES },
      },
    },
    async (request) => geocoding.forward(request.scope, request.query.q, { country: request.query.country, limit: request.query.limit }),
  );

  app.get(
    '/location/reverse',
    {
      schema: {
        tags: TAGS,
        summary: 'The nearest place to a point, with its distance in metres',
        querystring: Type.Object({ lat: Type.Number(), lon: Type.Number() }),
        response: { 200: Type.Object({ ...Place.properties, provider: Provider }, { additionalProperties: true }), ...ERROR_RESPONSES },
      },
    },
    async (request) => geocoding.reverse(request.scope, request.query.lat, request.query.lon),
  );

  app.get(
    '/location/usage',
    {
      schema: {
        tags: TAGS,
        summary: 'Lookups of the account per UTC day and kind (geolocate, geolocate:<provider type>, forward, reverse, geofence-eval)',
        querystring: Type.Object({ from: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'First day, YYYY-MM-DD (default 30 days ago)' })) }),
        response: { 200: Type.Object({ items: Type.Array(Type.Object({ day: Type.String(), kind: Type.String(), count: Type.Integer() })) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => ({ items: await usage.counts(request.scope.accountId, request.query.from ?? new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)) }),
  );
};
