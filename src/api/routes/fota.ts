import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { DeviceChannels } from '../../devices/device-server.js';
import { AppError } from '../../errors.js';
import type { FotaChannel } from '../../lwm2m/fota/fota-channel.js';
import { FOTA_MAX_CONCURRENCY, FOTA_MAX_DEVICES, FOTA_MAX_STEP_TIMEOUT_S } from '../../lwm2m/fota/fota-service.js';
import { EndpointRefParams, ERROR_RESPONSES, ErrorBody, List, PageQuery } from '../schemas.js';

const TAGS = ['fota'];

const FotaFields = {
  file: Type.String({ minLength: 1, maxLength: 255, description: 'Name of the repository file (POST /file/upload) to install' }),
  mode: Type.Optional(Type.Enum(['push', 'pull', 'auto'], { description: "push: the package is written to /5/0/0 block-wise; pull: the device fetches it from the Package URI /5/0/1; auto (default): from the device's Delivery Method /5/0/9" })),
  appendFileName: Type.Optional(Type.Boolean({ description: "Pull: append the file's name to the download URL (default false)" })),
  includePortInUrl: Type.Optional(Type.Boolean({ description: "Pull: write the port into the URL even when it is the scheme's default (default false)" })),
  protocol: Type.Optional(Type.Enum(['coap', 'coaps', 'http'], { description: 'Pull: the URL scheme; default coaps for devices registered over DTLS, else coap' })),
  timeout: Type.Optional(Type.Number({ minimum: 1, maximum: FOTA_MAX_STEP_TIMEOUT_S, description: 'Seconds each step (reset, download, update) may take; default 600' })),
};

const CampaignFields = {
  concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: FOTA_MAX_CONCURRENCY, description: 'Devices updated at once (default 10)' })),
  ratePerMinute: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()], { description: 'Devices started per minute at most (default: no limit)' })),
};

const EndpointFotaBody = Type.Object(FotaFields, { additionalProperties: false });

const JobBody = Type.Object(
  {
    ...FotaFields,
    ...CampaignFields,
    endpoints: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 300 }), { minItems: 1, maxItems: FOTA_MAX_DEVICES, description: 'Endpoint ids or k.<key>s' })),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 20, description: 'Endpoints having every tag (name, or name:value)' })),
    serviceId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    keyPrefix: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Endpoints whose key starts with this' })),
  },
  { additionalProperties: false },
);

const Counts = Type.Object({ total: Type.Integer(), pending: Type.Integer(), running: Type.Integer(), success: Type.Integer(), failed: Type.Integer(), aborted: Type.Integer() });

const Job = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  file: Type.Object({ name: Type.String(), sha256: Type.String(), size: Type.Integer(), version: Type.Union([Type.String(), Type.Null()]) }),
  options: Type.Object({
    mode: Type.String(),
    appendFileName: Type.Boolean(),
    includePortInUrl: Type.Boolean(),
    protocol: Type.Optional(Type.String()),
    stepTimeoutMs: Type.Integer(),
  }),
  selector: Type.Object({ endpoints: Type.Optional(Type.Array(Type.String())), tags: Type.Optional(Type.Array(Type.String())), serviceId: Type.Optional(Type.String()), keyPrefix: Type.Optional(Type.String()) }),
  concurrency: Type.Integer(),
  ratePerMinute: Type.Union([Type.Integer(), Type.Null()]),
  state: Type.Enum(['running', 'finished', 'cancelled']),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
  counts: Counts,
});

const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

const Device = Type.Object({
  jobId: Type.String(),
  endpointId: Type.String(),
  step: Type.Enum(['pending', 'preparing', 'downloading', 'updating', 'done']),
  outcome: Type.Union([Type.Enum(['success', 'failed', 'aborted']), Type.Null()]),
  mode: Type.Union([Type.Enum(['push', 'pull']), Type.Null()]),
  updateResult: Type.Union([Type.Integer(), Type.Null()]),
  reason: Nullable(Type.String()),
  failedStep: Nullable(Type.String()),
  previousVersion: Nullable(Type.String()),
  version: Nullable(Type.String()),
  startedAt: Nullable(Type.String()),
  finishedAt: Nullable(Type.String()),
  updatedAt: Type.String(),
});

const JobParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
const ACCEPTED = { 202: Job, 422: ErrorBody, ...ERROR_RESPONSES };

/** Firmware over the air (docs/fota.md): one endpoint's FOTA, and campaigns over many. */
export const fotaRoutes: FastifyPluginAsyncTypebox<{ devices: DeviceChannels }> = async (app, { devices }) => {
  const fota = (): FotaChannel => {
    if (!devices.fota) throw new AppError('IOTB_LWM2M_NOT_REGISTERED', 'The LwM2M server is not running in this process');
    return devices.fota;
  };

  app.post(
    '/endpoints/:ref/fota',
    { schema: { tags: TAGS, summary: "Update the endpoint's firmware with a repository file; answers at once with the job", params: EndpointRefParams, body: EndpointFotaBody, response: ACCEPTED } },
    async (request, reply) => reply.status(202).send(await fota().createFor(request.scope, request.params.ref, request.body)),
  );

  app.get(
    '/endpoints/:ref/fota',
    {
      schema: {
        tags: TAGS,
        summary: "The endpoint's current or last FOTA, with its job",
        params: EndpointRefParams,
        response: { 200: Type.Object({ device: Device, job: Job }), ...ERROR_RESPONSES },
      },
    },
    async (request) => fota().latestFor(request.scope, request.params.ref),
  );

  app.post(
    '/fota/jobs',
    { schema: { tags: TAGS, summary: 'A FOTA campaign over endpoints chosen by ids/keys, or by tags, service and key prefix', body: JobBody, response: ACCEPTED } },
    async (request, reply) => {
      const { endpoints, tags, serviceId, keyPrefix, ...input } = request.body;
      return reply.status(202).send(await fota().create(request.scope, input, { endpoints, tags, serviceId, keyPrefix }));
    },
  );

  app.get(
    '/fota/jobs',
    { schema: { tags: TAGS, summary: "The account's FOTA jobs, newest first", querystring: Type.Object(PageQuery), response: { 200: List(Job), ...ERROR_RESPONSES } } },
    async (request) => fota().jobs(request.scope, request.query),
  );

  app.get(
    '/fota/jobs/:id',
    { schema: { tags: TAGS, summary: 'A FOTA job with its counts per outcome', params: JobParams, response: { 200: Job, ...ERROR_RESPONSES } } },
    async (request) => fota().job(request.scope, request.params.id),
  );

  app.get(
    '/fota/jobs/:id/devices',
    {
      schema: {
        tags: TAGS,
        summary: "The job's devices and where each is",
        params: JobParams,
        querystring: Type.Object({ ...PageQuery, step: Type.Optional(Type.Enum(['pending', 'preparing', 'downloading', 'updating', 'done'])) }),
        response: { 200: List(Device), ...ERROR_RESPONSES },
      },
    },
    async (request) => fota().devices(request.scope, request.params.id, request.query),
  );

  app.post(
    '/fota/jobs/:id/cancel',
    { schema: { tags: TAGS, summary: 'Cancel a running job: devices not started and those still downloading end aborted', params: JobParams, response: { 200: Job, ...ERROR_RESPONSES } } },
    async (request) => fota().cancel(request.scope, request.params.id),
  );
};
