import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { DeviceChannels } from '../../devices/device-server.js';
import type { Domain } from '../../domain/domain.js';
import { AppError } from '../../errors.js';
import { formatName } from '../../lwm2m/codecs/index.js';
import { announcedObjects } from '../../lwm2m/registration.js';
import { MAX_HOLD_MS, PROXY_SEND_TTL_MS } from '../../lwm2m/held-requests.js';
import { LWM2M_OPERATIONS, type Lwm2mOperation, type OperationRequest } from '../../lwm2m/operations.js';
import { EndpointRefParams as RefParams, ERROR_RESPONSES, ErrorBody } from '../schemas.js';

const TAGS = ['lwm2m'];
/** How long an asynchronous request (with a context) waits for the device by default. */
const ASYNC_QUEUE_TIMEOUT_MS = 86_400_000;

const JsonValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
const ValueRecord = Type.Object({
  path: Type.String(),
  type: Type.String({ description: 'Resource type from the object definition (string, integer, float, boolean, opaque as base64, time as ISO 8601, objlnk as "o:i")' }),
  value: JsonValue,
  time: Type.Optional(Type.String({ description: 'Measurement time, when the device gave one' })),
});

const OperationFields = Type.Object(
  {
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'LwM2M path: /object[/instance[/resource[/instance]]]; `/` (the default) for readComposite and writeMulti' })),
    paths: Type.Optional(Type.Array(Type.String({ minLength: 2, maxLength: 40 }), { minItems: 1, maxItems: 100, description: 'readComposite, observeComposite: the paths; cancelObserve: the paths of the composite observation to cancel' })),
    token: Type.Optional(Type.String({ pattern: '^[0-9a-f]{2,16}$', description: 'cancelObserve: the token of the observation to cancel (as its lwm2m-data events carry it)' })),
    value: Type.Optional(Type.Unknown({ description: 'write/create: the value of the resource at `path`' })),
    values: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'write/create: values by absolute resource path, e.g. {"/3/0/14": "+02:00"}' })),
    format: Type.Optional(
      Type.String({ description: 'text, opaque, tlv, json, senml-json, senml-cbor, cbor, raw-cbor; default: preferredFormat, what worked, what the device announced (docs/lwm2m.md "Content formats")' }),
    ),
    partial: Type.Optional(Type.Boolean({ description: 'write: partial update (CoAP POST) instead of replace (PUT)' })),
    args: Type.Optional(Type.String({ maxLength: 1024, description: "exec: arguments, e.g. 0='v',1" })),
    attributes: Type.Optional(Type.Record(Type.String({ pattern: '^(pmin|pmax|gt|lt|st|epmin|epmax|edge|con|hqmax)$' }), Type.Union([Type.Number(), Type.String()]))),
    timeout: Type.Optional(Type.Integer({ minimum: 100, maximum: 300_000, default: 30_000, description: 'ms to wait for the device (CoAP retransmissions included)' })),
    directToQueue: Type.Optional(Type.Boolean({ description: 'Do not send now: wait in the device queue for its next update' })),
    queueTimeout: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 1_209_600_000, description: 'ms the request may wait in the device queue (queue mode, unavailable device); default: timeout, or 1 day with context' }),
    ),
  },
  { additionalProperties: false },
);

const OperationBody = Type.Object(
  {
    ...OperationFields.properties,
    context: Type.Optional(Type.Unknown({ description: 'Answer 202 at once; the request is stored, and its outcome arrives as an lwm2m-result event carrying this context' })),
  },
  { additionalProperties: false },
);

/** Operations a caller need not wait for (observations answer their caller). */
const HELD_OPERATIONS = LWM2M_OPERATIONS.filter((operation) => operation !== 'observe' && operation !== 'observeComposite' && operation !== 'cancelObserve');

const ProxySendBody = Type.Object(
  {
    ...OperationFields.properties,
    operation: Type.Enum([...HELD_OPERATIONS]),
    context: Type.Optional(Type.Unknown({ description: 'Given back in every lwm2m-result event of the request' })),
    ttl: Type.Optional(Type.Integer({ minimum: 1000, maximum: MAX_HOLD_MS, description: `ms the request may wait for the device (default ${PROXY_SEND_TTL_MS / 86_400_000} days)` })),
  },
  { additionalProperties: false },
);

const Accepted = Type.Object({
  accepted: Type.Boolean(),
  id: Type.String({ description: 'The held request: its lwm2m-result events carry it; GET/DELETE .../lwm2m/queue' }),
  queued: Type.Boolean({ description: 'It waits for the device (an intermediate lwm2m-result says so); false: it is being sent now' }),
});

const HeldItem = Type.Object({
  id: Type.String(),
  kind: Type.Enum(['queued', 'proxy'], { description: 'queued: an asynchronous request (a new registration purges it); proxy: proxy_send' }),
  operation: Type.String(),
  path: Type.String(),
  context: Type.Unknown(),
  createdAt: Type.String(),
  expiresAt: Type.String(),
});

const OperationResponse = Type.Object({
  operation: Type.String(),
  path: Type.String(),
  code: Type.String({ description: "The device's CoAP response code" }),
  values: Type.Optional(Type.Array(ValueRecord)),
  links: Type.Optional(Type.Array(Type.Object({ target: Type.String(), attributes: Type.Array(Type.Object({ name: Type.String(), value: Type.Optional(Type.String()) })) }))),
  location: Type.Optional(Type.String()),
  token: Type.String({ description: 'Ties the request to the lwm2m-data event it produced; observe: the observation token its notifications carry too' }),
  durationMs: Type.Number(),
  observing: Type.Optional(Type.Boolean({ description: 'observe: the device accepted the observation; notifications become lwm2m-data events' })),
});

/** Device management of LwM2M devices over HTTP (docs/lwm2m.md). */
export const lwm2mRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; devices: DeviceChannels }> = async (app, { domain, devices }) => {
  const management = () => {
    if (!devices.lwm2m) throw new AppError('IOTB_LWM2M_NOT_REGISTERED', 'The LwM2M server is not running in this process');
    return devices.lwm2m;
  };

  app.post(
    '/endpoints/:ref/lwm2m/:operation',
    {
      schema: {
        tags: TAGS,
        summary: 'Send an LwM2M operation to the device and wait for its answer (or, with context, answer 202 and emit lwm2m-result)',
        params: Type.Object({ ...RefParams.properties, operation: Type.Enum([...LWM2M_OPERATIONS]) }),
        body: OperationBody,
        response: { 200: OperationResponse, 202: Accepted, ...ERROR_RESPONSES, 405: ErrorBody, 415: ErrorBody, 502: ErrorBody, 504: ErrorBody },
      },
    },
    async (request, reply) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const body = request.body;
      const operation: Lwm2mOperation = request.params.operation;
      const lwm2mRequest = operationRequest(operation, body);
      if (body.context === undefined) return reply.send(await management().perform(endpoint, lwm2mRequest));
      // Asynchronous: stored, then sent when the device can take it; the outcome, success or failure, becomes an
      // lwm2m-result event of the endpoint (a request that waits says so first with an intermediate result).
      const held = await management().hold(endpoint, lwm2mRequest, { context: body.context, kind: 'queued', ttlMs: body.queueTimeout ?? ASYNC_QUEUE_TIMEOUT_MS, directToQueue: body.directToQueue });
      return reply.status(202).send({ accepted: true, ...held });
    },
  );

  app.post(
    '/endpoints/:ref/lwm2m/proxy_send',
    {
      schema: {
        tags: TAGS,
        summary: 'lwm2m.proxy_send: hold a request until the device can take it (through re-registrations and restarts, for up to ttl); each outcome is an lwm2m-result event with the context',
        params: RefParams,
        body: ProxySendBody,
        response: { 202: Accepted, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const { operation, ttl, context, ...rest } = request.body;
      const held = await management().hold(endpoint, operationRequest(operation, rest), { context: context ?? null, kind: 'proxy', ttlMs: ttl ?? PROXY_SEND_TTL_MS, directToQueue: rest.directToQueue });
      return reply.status(202).send({ accepted: true, ...held });
    },
  );

  app.get(
    '/endpoints/:ref/lwm2m/queue',
    {
      schema: {
        tags: TAGS,
        summary: 'The asynchronous requests and proxy_send requests waiting for the device, in the order they will be sent',
        params: RefParams,
        response: { 200: Type.Object({ waiting: Type.Integer({ description: 'Every request waiting, synchronous callers included' }), items: Type.Array(HeldItem) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      return { waiting: (await devices.lwm2m?.queued(endpoint)) ?? 0, items: (await devices.lwm2m?.heldRequests(endpoint)) ?? [] };
    },
  );

  app.delete(
    '/endpoints/:ref/lwm2m/queue/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Withdraw a waiting asynchronous or proxy_send request before it is sent (its lwm2m-result says cancelled)',
        params: Type.Object({ ...RefParams.properties, id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      if (!(await management().cancelHeld(endpoint, request.params.id))) throw new AppError('IOTB_LWM2M_REQUEST_NOT_FOUND');
      return reply.status(204).send(null);
    },
  );

  app.get(
    '/endpoints/:ref/lwm2m/objects',
    {
      schema: {
        tags: TAGS,
        summary: 'The objects and instances the device registered, its registration, the last-known values read from it and its active observations',
        params: RefParams,
        response: {
          200: Type.Object({
            registered: Type.Boolean(),
            registration: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
            objects: Type.Array(Type.Object({ id: Type.Integer(), name: Type.Optional(Type.String()), instances: Type.Array(Type.Integer()) })),
            lastKnown: Type.Array(ValueRecord),
            observations: Type.Array(Type.Object({ path: Type.String(), paths: Type.Optional(Type.Array(Type.String())), token: Type.String(), since: Type.String() }), {
              description: 'Active observations (observe; observeComposite with its paths); they end with the registration',
            }),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const registration = await devices.lwm2m?.registrationOf(endpoint);
      const objects = registration ? announcedObjects(registration) : {};
      return {
        registered: registration !== undefined,
        ...(registration && {
          registration: {
            id: registration.id,
            lwm2mVersion: registration.lwm2mVersion,
            lifetime: registration.lifetime,
            binding: registration.binding,
            queueMode: registration.queueMode,
            contentFormats: registration.contentFormats.map((format) => formatName(format) ?? String(format)),
            registeredAt: registration.registeredAt,
            updatedAt: registration.updatedAt,
          },
        }),
        objects: Object.entries(objects).map(([id, instances]) => ({ id: Number(id), name: devices.lwm2m?.objectName(endpoint, Number(id)), instances })),
        lastKnown: (await devices.lwm2m?.lastKnown(endpoint)) ?? [],
        observations: (await devices.lwm2m?.observations(endpoint)) ?? [],
      };
    },
  );
};

/** The device-management request of an HTTP body. */
function operationRequest(operation: Lwm2mOperation, body: Static<typeof OperationFields>): OperationRequest {
  return {
    operation,
    path: body.path ?? '/',
    paths: body.paths,
    token: body.token,
    value: body.value,
    values: body.values,
    format: body.format,
    partial: body.partial,
    args: body.args,
    attributes: body.attributes,
    timeoutMs: body.timeout ?? 30_000,
    directToQueue: body.directToQueue,
    queueTimeoutMs: body.queueTimeout,
  };
}
