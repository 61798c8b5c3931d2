import { Type } from 'typebox';
import type { ServiceOptions } from '../domain/services.js';
import { AppError } from '../errors.js';
import { boolOption, enumOption, stringOption } from '../devices/service-options.js';

export const NETWORK_SERVERS = ['chirpstack', 'tts'] as const;
export type NetworkServer = (typeof NETWORK_SERVERS)[number];

/** The options of a `lora` service (docs/lora.md). */
export interface LoraOptions {
  /** What the network server sends in `X-Webhook-Secret`; without it every webhook call is refused. */
  readonly webhookSecret: string | undefined;
  /** Create unknown devices (key: DevEUI) on their first webhook call instead of answering 404. */
  readonly autoProvision: boolean;
  /** Where `lora.downlink` enqueues: unset means downlinks are not configured. */
  readonly networkServer: NetworkServer | undefined;
  /** Base URL of the network server's API, e.g. `https://chirpstack.example.com` or `https://eu1.cloud.thethings.network`. */
  readonly apiUrl: string | undefined;
  /** ChirpStack API key, or TTS API key with traffic-write rights. */
  readonly apiKey: string | undefined;
  /** TTS: application id (else the one seen in uplinks) and the id of the webhook downlinks go through. */
  readonly ttsApplicationId: string | undefined;
  readonly ttsWebhookId: string | undefined;
}

export const MIN_SECRET_LENGTH = 16;

/** What `loraOptions` accepts, as the API publishes it (GET /services/types); the check below is the authority. */
export const LORA_OPTIONS_SCHEMA = Type.Object(
  {
    webhookSecret: Type.Optional(
      Type.String({ minLength: MIN_SECRET_LENGTH, maxLength: 1000, examples: ['a-long-random-webhook-secret'], description: 'What the network server sends in X-Webhook-Secret; without it every webhook call is refused' }),
    ),
    autoProvision: Type.Optional(Type.Boolean({ default: false, description: 'Create the endpoint of an unknown DevEUI on its first webhook call instead of answering 404' })),
    networkServer: Type.Optional(Type.Enum([...NETWORK_SERVERS], { description: 'Where lora.downlink sends: ChirpStack or The Things Stack (unset: no downlinks)' })),
    apiUrl: Type.Optional(
      Type.String({ maxLength: 2000, pattern: '^https?://[^\\s/]+', examples: ['https://eu1.cloud.thethings.network'], description: "Base URL of the network server's API" }),
    ),
    apiKey: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, examples: ['NNSXS.EXAMPLE'], description: 'ChirpStack API key, or a TTS API key that may write downlink traffic' })),
    ttsApplicationId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, examples: ['my-app'], description: "TTS: the application id (default: the one the device's uplinks carried)" })),
    ttsWebhookId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, examples: ['iotbridge'], description: 'TTS: the id of the application webhook downlinks go through' })),
  },
  { additionalProperties: true },
);

export function loraOptions(options: ServiceOptions): LoraOptions {
  const webhookSecret = stringOption(options, 'webhookSecret', 1000);
  if (webhookSecret !== undefined && webhookSecret.length < MIN_SECRET_LENGTH) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `options.webhookSecret needs at least ${MIN_SECRET_LENGTH} characters`, { option: 'webhookSecret' });
  }
  const apiUrl = stringOption(options, 'apiUrl', 2000);
  if (apiUrl !== undefined && !/^https?:\/\/[^\s/]+/.test(apiUrl)) {
    throw new AppError('IOTB_REQUEST_VALIDATION', 'options.apiUrl must be an http:// or https:// URL', { option: 'apiUrl', value: apiUrl });
  }
  return {
    webhookSecret,
    autoProvision: boolOption(options, 'autoProvision', false),
    networkServer: options.networkServer === undefined ? undefined : enumOption(options, 'networkServer', NETWORK_SERVERS, 'chirpstack'),
    apiUrl: apiUrl?.replace(/\/+$/, ''),
    apiKey: stringOption(options, 'apiKey', 2000),
    ttsApplicationId: stringOption(options, 'ttsApplicationId', 200),
    ttsWebhookId: stringOption(options, 'ttsWebhookId', 200),
  };
}
