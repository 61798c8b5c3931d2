import type { Client } from 'aedes';
import type { Endpoint } from '../domain/endpoints.js';
import type { Configured } from '../devices/service-directory.js';
import type { Mqtt5Adapter, Mqtt5Session } from './mqtt5-adapter.js';
import type { MqttOptions } from './mqtt-options.js';
import type { TopicSpace } from './topic-space.js';

export type MqttService = Configured<MqttOptions>;

/** A device that passed log-in: what its connection may do. */
export interface Login {
  readonly endpoint: Endpoint;
  readonly target: MqttService;
  readonly space: TopicSpace;
  readonly remoteAddr: string;
  /** The client id the device sent; the broker knows the session by the endpoint id instead. */
  readonly clientId: string;
  readonly protocolVersion: 3 | 4 | 5;
  /** MQTT 5 only: what the device asked of its session, and the adapter its connection goes through. */
  readonly v5?: { readonly session: Mqtt5Session; readonly adapter: Mqtt5Adapter };
}

/** A logged-in device whose connection its service's broker has taken (kept by endpoint id, the broker's client id). */
export interface Session {
  readonly login: Login;
  readonly client: Client;
  endpoint: Endpoint;
  touchedAt: number;
}
