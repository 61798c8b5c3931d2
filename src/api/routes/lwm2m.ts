import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DeviceChannels } from '../../devices/device-server.js';
import type { Domain } from '../../domain/domain.js';
import type { Endpoint } from '../../domain/endpoints.js';
import { AppError } from '../../errors.js';
import { createEvent, type Event } from '../../events/event.js';
import { formatName } from '../../lwm2m/codecs/index.js';
import { announcedObjects } from '../../lwm2m/registration.js';
import { LWM2M_OPERATIONS, type Lwm2mOperation, type OperationResult } from '../../lwm2m/device-management.js';
import { EndpointRefParams as RefParams, ERROR_RESPONSES, ErrorBody } from '../schemas.js';

const TAGS = ['lwm2m'];

const JsonValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
const ValueRecord = Type.Object({
  path: Type.String(),
  type: Type.String({ description: 'Resource type from the object definition (string, integer, float, boolean, opaque as base64, time as ISO 8601, objlnk as "o:i")' }),
  value: JsonValue,
  time: Type.Optional(Type.String({ description: 'Measurement time, when the device gave one' })),
});

const OperationBody = Type.Object(
  {
    path: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'LwM2M path: /object[/instance[/resource[/instance]]]; `/` (the default) for readComposite and writeMulti' })),
    paths: Type.Optional(Type.Array(Type.String({ minLength: 2, maxLength: 40 }), { minItems: 1, maxItems: 100, description: 'readComposite: the paths to read' })),
    value: Type.Optional(Type.Unknown({ description: 'write/create: the value of the resource at `path`' })),
    values: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'write/create: values by absolute resource path, e.g. {"/3/0/14": "+02:00"}' })),
    format: Type.Optional(Type.String({ description: 'text, opaque, tlv, json, senml-json, senml-cbor, cbor; default TLV (LwM2M 1.0) or SenML CBOR (1.1+)' })),
    partial: Type.Optional(Type.Boolean({ description: 'write: partial update (CoAP POST) instead of replace (PUT)' })),
    args: Type.Optional(Type.String({ maxLength: 1024, description: "exec: arguments, e.g. 0='v',1" })),
    attributes: Type.Optional(Type.Record(Type.String({ pattern: '^(pmin|pmax|gt|lt|st|epmin|epmax|edge|con|hqmax)$' }), Type.Union([Type.Number(), Type.String()]))),
    timeout: Type.Optional(Type.Integer({ minimum: 100, maximum: 300_000, default: 30_000, description: 'ms to wait for the device (CoAP retransmissions included)' })),
    context: Type.Optional(Type.Unknown({ description: 'Answer 202 at once; the outcome arrives as an lwm2m-result event carrying this context' })),
    directToQueue: Type.Optional(Type.Boolean({ description: 'Do not send now: wait in the device queue for its next update' })),
    queueTimeout: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 1_209_600_000, description: 'ms the request may wait in the device queue (queue mode, unavailable device); default: timeout, or 1 day with context' }),
    ),
  },
  { additionalProperties: false },
);

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
        response: { 200: OperationResponse, 202: Type.Object({ accepted: Type.Boolean() }), ...ERROR_RESPONSES, 405: ErrorBody, 415: ErrorBody, 502: ErrorBody, 504: ErrorBody },
      },
    },
    async (request, reply) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const body = request.body;
      const operation: Lwm2mOperation = request.params.operation;
      const asynchronous = body.context !== undefined;
      const run = (hooks: { onQueued?: () => void } = {}): Promise<OperationResult> =>
        management().perform(endpoint, {
          operation,
          path: body.path ?? '/',
          paths: body.paths,
          value: body.value,
          values: body.values,
          format: body.format,
          partial: body.partial,
          args: body.args,
          attributes: body.attributes,
          timeoutMs: body.timeout ?? 30_000,
          directToQueue: body.directToQueue,
          queueTimeoutMs: body.queueTimeout ?? (asynchronous ? 86_400_000 : undefined),
        }, hooks);
      if (!asynchronous) return reply.send(await run());
      // Asynchronous: the outcome, success or failure, becomes an lwm2m-result event of the endpoint; a request
      // that waits in the device queue says so first with an intermediate result.
      const queued = () => void domain.events.publish(lwm2mResult(endpoint, body.context, { intermediate: true, queued: true, operation, path: body.path }));
      void run({ onQueued: queued }).then(
        (result) => domain.events.publish(lwm2mResult(endpoint, body.context, { success: true, ...result })),
        (error: unknown) =>
          domain.events.publish(
            lwm2mResult(endpoint, body.context, {
              success: false,
              operation,
              path: body.path ?? '/',
              error: error instanceof AppError ? { code: error.code, message: error.message, details: error.details } : { code: 'IOTB_INTERNAL', message: String(error) },
            }),
          ),
      );
      return reply.status(202).send({ accepted: true });
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
            observations: Type.Array(Type.Object({ path: Type.String(), token: Type.String(), since: Type.String() }), { description: 'Active observations (observe); they end with the registration' }),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const endpoint = await domain.endpoints.get(request.scope, request.params.ref);
      const registration = devices.lwm2m?.registrationOf(endpoint);
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
        observations: devices.lwm2m?.observations(endpoint) ?? [],
      };
    },
  );
};

function lwm2mResult(endpoint: Endpoint, context: unknown, data: Record<string, unknown>): Event {
  return createEvent({
    type: 'lwm2m-result',
    accountId: endpoint.accountId,
    serviceId: endpoint.serviceId,
    endpointId: endpoint.id,
    endpointKey: endpoint.key,
    data: { context, intermediate: false, ...data },
  });
}
