import type { Logger } from 'pino';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import type { OutboundResponse } from '../devices/outbound-http.js';
import type { DownlinkOptions, LoraChannel } from './lora-channel.js';
import { loraOptions, type LoraOptions } from './lora-options.js';

/** How long the network server may take to accept a downlink. */
const DOWNLINK_TIMEOUT_MS = 10_000;

/** Largest FRMPayload LoRaWAN carries at the fastest data rates (LoRaWAN Regional Parameters: 242 bytes). */
export const MAX_DOWNLINK_BYTES = 242;

interface NetworkRequest {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** The parts of the process the LoRa service uses. */
export type LoraServerContext = Pick<DeviceServerContext, 'channels' | 'domain' | 'logger' | 'outbound'>;

/**
 * LoRa has no listener of its own (uplinks arrive as HTTP webhooks, `src/api/routes/lora.ts`); this is
 * its device-server side: the options check and downlinks through the network server's HTTP API.
 */
export class LoraService implements DeviceServer, LoraChannel {
  readonly name = 'lora';
  readonly #context: LoraServerContext;
  readonly #logger: Logger;

  constructor(context: LoraServerContext) {
    this.#context = context;
    this.#logger = context.logger.child({ server: 'lora' });
    context.domain.services.checkOptions('lora', (options) => {
      const { apiUrl } = loraOptions(options);
      if (apiUrl !== undefined) context.outbound.checkUrl(apiUrl);
    });
    context.channels.lora = this;
  }

  async start(): Promise<Record<string, number>> {
    return {};
  }

  async stop(): Promise<void> {}

  async downlink(scope: Scope, ref: string, payload: Buffer, options: DownlinkOptions): Promise<{ network: string; id: string | null }> {
    const endpoint = await this.#context.domain.endpoints.get(scope, ref);
    const service = await this.#context.domain.services.get(scope, endpoint.serviceId);
    if (service.type !== 'lora') throw new AppError('IOTB_DEVICE_WRONG_PROTOCOL', 'The endpoint does not belong to a LoRa service');
    if (payload.length > MAX_DOWNLINK_BYTES) throw new AppError('IOTB_REQUEST_VALIDATION', `A LoRaWAN downlink carries at most ${MAX_DOWNLINK_BYTES} bytes`);
    const settings = loraOptions(service.options);
    const request = settings.networkServer === 'tts' ? ttsRequest(settings, endpoint, payload, options) : chirpStackRequest(settings, endpoint, payload, options);
    const answer = await this.#post(request, settings, endpoint);
    const id = settings.networkServer === 'chirpstack' && typeof (answer as { id?: unknown } | null)?.id === 'string' ? (answer as { id: string }).id : null;
    return { network: settings.networkServer!, id };
  }

  async #post(request: NetworkRequest, settings: LoraOptions, endpoint: Endpoint): Promise<unknown> {
    let response: OutboundResponse;
    try {
      response = await this.#context.outbound.postJson(request.url, request.headers, request.body, DOWNLINK_TIMEOUT_MS);
    } catch (error) {
      if (error instanceof AppError) throw error;
      this.#logger.warn({ err: error, endpointId: endpoint.id, network: settings.networkServer }, 'LoRa downlink: network server unreachable');
      throw new AppError('IOTB_LORA_DOWNLINK_FAILED', `The network server is unreachable: ${(error as Error).message}`);
    }
    const { text } = response;
    if (response.status < 200 || response.status > 299) {
      this.#logger.warn({ endpointId: endpoint.id, network: settings.networkServer, status: response.status }, 'LoRa downlink refused by the network server');
      throw new AppError('IOTB_LORA_DOWNLINK_FAILED', `The network server answered ${response.status}`, { status: response.status, body: text.slice(0, 500) });
    }
    try {
      return text === '' ? null : (JSON.parse(text) as unknown);
    } catch {
      return null;
    }
  }
}

function configured(settings: LoraOptions): { apiUrl: string; apiKey: string } {
  if (!settings.networkServer || !settings.apiUrl || !settings.apiKey) {
    throw new AppError('IOTB_LORA_DOWNLINK_NOT_CONFIGURED', 'Set the service options networkServer, apiUrl and apiKey to send downlinks');
  }
  return { apiUrl: settings.apiUrl, apiKey: settings.apiKey };
}

/** ChirpStack v4 REST API (gRPC gateway): DeviceService.Enqueue, `POST /api/devices/{queue_item.dev_eui}/queue` (api/device.proto). */
function chirpStackRequest(settings: LoraOptions, endpoint: Endpoint, payload: Buffer, options: DownlinkOptions): NetworkRequest {
  const { apiUrl, apiKey } = configured(settings);
  return {
    url: `${apiUrl}/api/devices/${encodeURIComponent(endpoint.key)}/queue`,
    // The gRPC gateway passes Grpc-Metadata-* headers on as gRPC metadata, where ChirpStack reads the API key.
    headers: { 'grpc-metadata-authorization': `Bearer ${apiKey}` },
    body: { queueItem: { devEui: endpoint.key, confirmed: options.confirmed, fPort: options.port, data: payload.toString('base64') } },
  };
}

/** The Things Stack v3: push to the device's downlink queue through an application webhook. */
function ttsRequest(settings: LoraOptions, endpoint: Endpoint, payload: Buffer, options: DownlinkOptions): NetworkRequest {
  const { apiUrl, apiKey } = configured(settings);
  const applicationId = settings.ttsApplicationId ?? stringDetail(endpoint.statusDetails.loraApplicationId);
  const deviceId = stringDetail(endpoint.parameters.ttsDeviceId) ?? stringDetail(endpoint.statusDetails.loraDeviceId);
  if (!settings.ttsWebhookId || !applicationId) {
    throw new AppError('IOTB_LORA_DOWNLINK_NOT_CONFIGURED', 'Set the service option ttsWebhookId (and ttsApplicationId, unless an uplink told it) to send TTS downlinks');
  }
  if (!deviceId) {
    throw new AppError('IOTB_LORA_DOWNLINK_NOT_CONFIGURED', 'The TTS device id is not known yet: set the endpoint parameter ttsDeviceId, or wait for its first uplink');
  }
  const [application, webhook, device] = [applicationId, settings.ttsWebhookId, deviceId].map(encodeURIComponent);
  return {
    url: `${apiUrl}/api/v3/as/applications/${application}/webhooks/${webhook}/devices/${device}/down/push`,
    headers: { authorization: `Bearer ${apiKey}` },
    body: { downlinks: [{ f_port: options.port, frm_payload: payload.toString('base64'), priority: options.priority, confirmed: options.confirmed }] },
  };
}

function stringDetail(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
