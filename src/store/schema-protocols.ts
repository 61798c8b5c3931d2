/**
 * Table shapes of the device protocols: the UDP queue, MQTT sessions, LwM2M registrations, observations, queue,
 * bootstrap configurations and object models.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Generated } from 'kysely';
import type { Json } from './schema-json.js';

export interface UdpQueueTable {
  seq: Generated<number>;
  endpoint_id: string;
  /** base64 */
  payload: string;
  expires_at: number;
}

export interface MqttRetainedTable {
  service_id: string;
  topic: string;
  /** JSON of the stored packet (payload base64), see src/store/mqtt-session-store.ts. */
  packet: string;
}

export interface MqttSubscriptionsTable {
  service_id: string;
  client_id: string;
  topic: string;
  qos: number;
  /** MQTT 5 subscription options, 0 for MQTT 3.1.1 (migration 0048): No Local 0/1, Retain Handling 0–2. */
  no_local: Generated<number>;
  retain_handling: Generated<number>;
}

export interface MqttOutgoingTable {
  seq: Generated<number>;
  service_id: string;
  client_id: string;
  broker_id: string;
  broker_counter: number;
  message_id: number | null;
  packet: string;
  /** 1 once the device's PUBREC came for this QoS 2 message: the PUBREL is what is sent again (migration 0047). */
  released: Generated<number>;
}

export interface MqttIncomingTable {
  service_id: string;
  client_id: string;
  message_id: number;
  packet: string;
}

export interface MqttSessionExpiryTable {
  service_id: string;
  client_id: string;
  expires_at: number;
}

export interface Lwm2mRegistrationsTable {
  id: string;
  endpoint_id: string;
  account_id: string;
  service_id: string;
  peer_address: string;
  peer_port: number;
  /** JSON: what the device said in its Register and Updates (RegistrationParameters). */
  parameters: string;
  registered_at: number;
  updated_at: number;
}

export interface Lwm2mLastKnownTable {
  endpoint_id: string;
  path: string;
  /** JSON: `{path, type, value, time?}`. */
  record: string;
  updated_at: number;
}

export interface Lwm2mObservationsTable {
  token: string;
  endpoint_id: string;
  registration_id: string;
  operation: string;
  path: string;
  /** JSON array of an Observe-Composite's paths; null for a single path. */
  paths: string | null;
  format: number;
  since: number;
}

export interface Lwm2mQueueTable {
  id: string;
  account_id: string;
  endpoint_id: string;
  /** Order per device. */
  seq: number;
  /** `queued` (purged by a new registration) or `proxy` (waits through it, lwm2m.proxy_send). */
  kind: string;
  /** JSON: the operation request (without its timeouts). */
  request: string;
  /** JSON: the caller's context, given back in the lwm2m-result events. */
  context: string;
  created_at: number;
  expires_at: number;
}

export interface Lwm2mBootstrapConfigsTable {
  endpoint_id: string;
  account_id: string;
  /** JSON: the checked configuration (src/lwm2m/bootstrap/config.ts), PSK key included. */
  config: string;
  updated_at: number;
}

/** LwM2M object definitions uploaded by accounts; `definition` is the object as JSON (ObjectJson). */
export interface ObjectModelsTable {
  account_id: string;
  object_id: number;
  name: string;
  version: string;
  definition: Json;
  created_at: number;
  updated_at: number;
}
