import type { Lwm2mCluster } from '../lwm2m/lwm2m-cluster.js';
import type { MqttCluster } from '../mqtt/mqtt-cluster.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Domain } from '../domain/domain.js';
import type { ServerCertificate } from '../dtls/server-certificate.js';
import type { LoraChannel } from '../lora/lora-channel.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import type { CoapChannel } from '../lwm2m/coap-channel.js';
import type { FotaChannel } from '../lwm2m/fota/fota-channel.js';
import type { FotaStore } from '../lwm2m/fota/model.js';
import type { LastKnownStore } from '../lwm2m/last-known-store.js';
import type { Lwm2mChannel } from '../lwm2m/lwm2m-channel.js';
import type { ObjectRegistry } from '../lwm2m/objects/registry.js';
import type { ObservationStore } from '../lwm2m/observation-store.js';
import type { DeviceQueueStore } from '../lwm2m/queue-store.js';
import type { RegistrationStore } from '../lwm2m/registration-store.js';
import type { MqttChannel } from '../mqtt/mqtt-channel.js';
import type { MqttSessionStore } from '../mqtt/session-store.js';
import type { TcpChannel } from '../tcp/tcp-channel.js';
import type { RunResult } from '../triggers/sandbox/protocol.js';
import type { ScriptRun } from '../triggers/sandbox/worker-pool.js';
import type { UdpChannel } from '../udp/udp-channel.js';
import type { UdpQueueStore } from '../udp/udp-queue.js';
import type { OutboundHttp } from './outbound-http.js';
import type { DevicePresence } from './presence.js';
import type { SendCaps } from './send-caps.js';
import type { SendGuard } from './send-guard.js';

/**
 * A device-facing server (CoAP, MQTT, UDP, TCP listeners). The service starts them after the event bus
 * and stops them before it, so nothing a device sends is lost between the two.
 */
export interface DeviceServer {
  /** Short name used in logs and in the `ports` map, e.g. `mqtt`. */
  readonly name: string;
  /** Binds and returns the bound ports by name (the real port when 0 was asked for). */
  start(): Promise<Record<string, number>>;
  /** Stops accepting, closes device connections, waits for work in flight. */
  stop(): Promise<void>;
  /** Once every server and the HTTP API listen (their ports known): work that hands devices URLs starts here. */
  ready?(): Promise<void>;
  /**
   * Ends every connection or registration of the account's devices (a Super-Admin suspended it): they find out
   * now rather than at their next message, and are refused when they come back. Returns how many were ended.
   */
  closeAccount?(accountId: string): Promise<number>;
}

/** Runs a script of an account that is not a trigger (e.g. a UDP service's key script) in the account's sandbox. */
export interface DeviceScripts {
  runScript(run: Omit<ScriptRun, 'namespaces'>): Promise<RunResult>;
}

/** What every device server is built from. */
export interface DeviceServerContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly domain: Domain;
  readonly presence: DevicePresence;
  /** Where each server offers its script-facing API (`mqtt.publish`, `udp.send`, …). */
  readonly channels: DeviceChannels;
  /** Protocol state that must survive a restart, each server's own slice (built in app.ts, src/store/stores.ts). */
  readonly stores: DeviceStores;
  readonly scripts: DeviceScripts;
  /** LwM2M object definitions (shipped and per account): what codecs and device management type values with. */
  readonly objects: ObjectRegistry;
  /** LwM2M bootstrap configurations (per endpoint, per service default): what the Bootstrap-Server writes. */
  readonly bootstrapConfigs: BootstrapConfigs;
  /** The DTLS server certificate (CoAPS); undefined when CoAPS is off. */
  readonly serverCertificate: ServerCertificate | undefined;
  /** Asked before anything is sent to a device address (UDP, CoAP, LwM2M): refuses what no device can be at. */
  readonly sendGuard: SendGuard;
  /** Per-endpoint and per-account caps on what scripts send to devices. */
  readonly sendCaps: SendCaps;
  /** HTTP to addresses tenants configured (a LoRa network server): public ones, and those the operator allows. */
  readonly outbound: OutboundHttp;
  /** Cluster mode only: what each protocol shares with the other nodes (docs/cluster.md). */
  readonly cluster?: { readonly mqtt: MqttCluster; readonly lwm2m: Lwm2mCluster } | undefined;
  /** The ports the service listens on by name (`http`, `coap`, `coaps`, …), filled in as servers start. */
  readonly ports: Readonly<Record<string, number>>;
}

/** The LwM2M server's state: registrations, what it knows and holds for devices, FOTA jobs. */
export interface Lwm2mStores {
  readonly registrations: RegistrationStore;
  readonly lastKnown: LastKnownStore;
  readonly observations: ObservationStore;
  readonly queue: DeviceQueueStore;
  readonly fota: FotaStore;
}

/** What the device servers keep across restarts, by protocol; implementations are in src/store/. */
export interface DeviceStores {
  readonly lwm2m: Lwm2mStores;
  /** Retained messages and persistent sessions of every MQTT service's broker. */
  readonly mqtt: MqttSessionStore;
  /** Messages `udp.queue` holds for devices until they next send. */
  readonly udp: UdpQueueStore;
}

/**
 * The script-facing side of the device servers, filled in by each server when it is built; protocol
 * namespaces (`src/triggers/namespaces/<protocol>.ts`) find them here. A missing one means that server is
 * not running in this process, and its namespace says so to the script.
 */
// Each protocol adds one optional field: `mqtt?: MqttChannel`, `udp?: UdpChannel`, …
export interface DeviceChannels {
  udp?: UdpChannel;
  tcp?: TcpChannel;
  lora?: LoraChannel;
  lwm2m?: Lwm2mChannel;
  /** Firmware over the air through LwM2M object 5 (jobs and campaigns). */
  fota?: FotaChannel;
  coap?: CoapChannel;
  mqtt?: MqttChannel;
}
