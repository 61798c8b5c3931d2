import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DevicePresence } from '../../devices/presence.js';
import type { Domain } from '../../domain/domain.js';
import type { Endpoint } from '../../domain/endpoints.js';
import type { Service } from '../../domain/services.js';
import { AppError } from '../../errors.js';
import { loraOptions } from '../../lora/lora-options.js';
import { CHIRPSTACK_EVENTS, fromChirpStack, fromTheThingsStack, type LoraMessage } from '../../lora/network-events.js';
import { ErrorBody } from '../schemas.js';

export const WEBHOOK_SECRET_HEADER = 'x-webhook-secret';

declare module 'fastify' {
  interface FastifyRequest {
    /** The LoRa service whose webhook secret the request carried (LoRa webhook routes only). */
    loraService: Service;
  }
}

const DevEui = Type.String({ pattern: '^[0-9a-fA-F]{16}$', description: 'DevEUI, 16 hex digits' });
const ServiceParams = Type.Object({ serviceId: Type.String({ minLength: 1, maxLength: 64 }) });
const Accepted = Type.Object(
  {
    event: Type.Union([Type.String(), Type.Null()], { description: 'The event type emitted, or null when this network event is not turned into one' }),
    endpointId: Type.Optional(Type.String()),
  },
  { description: 'Accepted' },
);
const WEBHOOK_ERRORS = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 415: ErrorBody };

/** Compared in constant time, as digests, so neither content nor length leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * LoRaWAN network-server webhooks (docs/lora.md). No API token: the caller proves itself with the
 * service's `webhookSecret` in `X-Webhook-Secret`, checked before the body is read. An unknown service,
 * a service of another type, one without a secret and a wrong secret all answer the same 401.
 */
export const loraRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; presence: DevicePresence }> = async (app, { domain, presence }) => {
  app.decorateRequest('loraService', null as unknown as Service);

  const authenticate = async (request: FastifyRequest): Promise<void> => {
    const { serviceId } = request.params as { serviceId: string };
    const given = request.headers[WEBHOOK_SECRET_HEADER];
    const service = await domain.services.find(serviceId);
    const secret = service?.type === 'lora' ? loraOptions(service.options).webhookSecret : undefined;
    if (!service || secret === undefined || typeof given !== 'string' || !sameSecret(given, secret)) throw new AppError('IOTB_LORA_WEBHOOK_UNAUTHORIZED');
    request.loraService = service;
  };

  /** The endpoint keyed by the DevEUI in this service only; created when the service auto-provisions. */
  const deviceOf = async (service: Service, devEui: string): Promise<Endpoint> => {
    const scope = await domain.accounts.platformScope(service.accountId, `lora-webhook:${service.id}`);
    try {
      return await domain.endpoints.get(scope, `k.${devEui}`, service.id);
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'IOTB_ENDPOINT_NOT_FOUND' && loraOptions(service.options).autoProvision)) throw error;
    }
    try {
      return await presence.provision(service, devEui);
    } catch (error) {
      // A retried webhook call created it meanwhile.
      if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_KEY_TAKEN') return domain.endpoints.get(scope, `k.${devEui}`, service.id);
      throw error;
    }
  };

  const accept = async (service: Service, message: LoraMessage | undefined) => {
    if (!message) return { event: null };
    let endpoint = await deviceOf(service, message.devEui);
    if (message.fromDevice) endpoint = await presence.heard(endpoint, { protocol: 'lora', remoteAddr: message.gatewayId }, message.details);
    await presence.emit(endpoint, message.type, message.data);
    return { event: message.type, endpointId: endpoint.id };
  };

  app.post(
    '/lora/:serviceId/chirpstack',
    {
      config: { public: true },
      onRequest: authenticate,
      schema: {
        tags: ['lora'],
        summary: 'ChirpStack v4 HTTP integration webhook (authenticated by X-Webhook-Secret, not a token)',
        security: [],
        params: ServiceParams,
        querystring: Type.Object({ event: Type.Union(CHIRPSTACK_EVENTS.map((e) => Type.Literal(e)), { description: 'ChirpStack event type' }) }),
        headers: Type.Object({ [WEBHOOK_SECRET_HEADER]: Type.Optional(Type.String({ description: "The service's webhookSecret option" })) }),
        body: Type.Object({ deviceInfo: Type.Object({ devEui: DevEui }) }, { description: 'The event as ChirpStack marshals it to JSON (integration.proto)' }),
        response: { 202: Accepted, ...WEBHOOK_ERRORS },
      },
    },
    async (request, reply) => reply.status(202).send(await accept(request.loraService, fromChirpStack(request.query.event, request.body))),
  );

  app.post(
    '/lora/:serviceId/tts',
    {
      config: { public: true },
      onRequest: authenticate,
      schema: {
        tags: ['lora'],
        summary: 'The Things Stack v3 webhook (authenticated by X-Webhook-Secret, not a token)',
        security: [],
        params: ServiceParams,
        headers: Type.Object({ [WEBHOOK_SECRET_HEADER]: Type.Optional(Type.String({ description: "The service's webhookSecret option" })) }),
        body: Type.Object(
          { end_device_ids: Type.Object({ device_id: Type.String({ minLength: 1 }), dev_eui: Type.Optional(DevEui) }) },
          { description: 'An ApplicationUp message in JSON (uplink_message, join_accept, downlink_ack, …)' },
        ),
        response: { 202: Accepted, ...WEBHOOK_ERRORS },
      },
    },
    async (request, reply) => reply.status(202).send(await accept(request.loraService, fromTheThingsStack(request.body))),
  );
};
