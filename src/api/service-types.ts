// The service types and the JSON Schema of each one's options (GET /services/types): what a form or a tool
// needs to offer the right options per type. POST and PUT /services validate the common options by the flat
// `ServiceOptions` schema and each protocol's options by its own check (src/<protocol>/<protocol>-options.ts),
// which every schema here stands beside; test/api/service-types.test.ts holds the two to the same answers.
import { Type, type TObject } from 'typebox';
import type { ServiceType } from '../domain/services.js';
import { LORA_OPTIONS_SCHEMA } from '../lora/lora-options.js';
import { MQTT_OPTIONS_SCHEMA } from '../mqtt/mqtt-options.js';
import { TCP_OPTIONS_SCHEMA } from '../tcp/tcp-options.js';
import { UDP_OPTIONS_SCHEMA } from '../udp/udp-options.js';
import { ServiceOptions } from './schemas.js';

const common = ServiceOptions.properties;

const COAP_OPTIONS_SCHEMA = Type.Object(
  { keepAliveMode: common.keepAliveMode, coapMaxMessageSize: common.coapMaxMessageSize, allowNoSec: common.allowNoSec, trustedCertificates: common.trustedCertificates },
  { additionalProperties: true },
);

const LWM2M_OPTIONS_SCHEMA = Type.Object(
  { ...COAP_OPTIONS_SCHEMA.properties, forceQueueMode: common.forceQueueMode, preferredFormat: common.preferredFormat, publicHost: common.publicHost, bootstrap: common.bootstrap },
  { additionalProperties: true },
);

export interface ServiceTypeInfo {
  readonly type: ServiceType;
  readonly description: string;
  readonly options: TObject;
}

/** Every service type, in the order a form offers them. */
export const SERVICE_TYPE_INFO: readonly ServiceTypeInfo[] = [
  { type: 'lwm2m', description: 'LwM2M 1.0–1.2 devices over CoAP and CoAPS: registration, device management, bootstrap, FOTA (docs/lwm2m.md)', options: LWM2M_OPTIONS_SCHEMA },
  { type: 'coap', description: 'Plain CoAP devices posting to /d/<key>/… over CoAP and CoAPS (docs/coap.md)', options: COAP_OPTIONS_SCHEMA },
  { type: 'mqtt', description: 'MQTT 3.1.1 and 5 devices on the built-in broker, each in its own topic space (docs/mqtt.md)', options: MQTT_OPTIONS_SCHEMA },
  { type: 'udp', description: 'Raw UDP datagrams, the device named by a key prefix, the source address or a script (docs/udp-tcp.md)', options: UDP_OPTIONS_SCHEMA },
  { type: 'tcp', description: 'Raw TCP streams cut into frames by a delimiter or a length header (docs/udp-tcp.md)', options: TCP_OPTIONS_SCHEMA },
  { type: 'lora', description: 'LoRaWAN devices through ChirpStack or The Things Stack webhooks, with downlinks (docs/lora.md)', options: LORA_OPTIONS_SCHEMA },
  { type: 'http', description: 'Devices that call the HTTP API with their own credentials', options: Type.Object({}, { additionalProperties: true }) },
];
