import type { CoapChannel } from '../lwm2m/plain-coap.js';
import type { ServerCertificate } from '../dtls/server-certificate.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import type { DeviceManagement } from '../lwm2m/device-management.js';
import type { FotaService } from '../lwm2m/fota/fota-service.js';
import type { ObjectRegistry } from '../lwm2m/objects/registry.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Domain } from '../domain/domain.js';
import type { Database } from '../store/database.js';
import type { RunResult } from '../triggers/sandbox/protocol.js';
import type { ScriptRun } from '../triggers/sandbox/worker-pool.js';
import type { LoraChannel } from '../lora/lora-channel.js';
import type { MqttChannel } from '../mqtt/mqtt-server.js';
import type { TcpChannel } from '../tcp/tcp-server.js';
import type { UdpChannel } from '../udp/udp-server.js';
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
  /** Storage for protocol state that must survive a restart (the UDP send queue). */
  readonly database: Database;
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
  /** The ports the service listens on by name (`http`, `coap`, `coaps`, …), filled in as servers start. */
  readonly ports: Readonly<Record<string, number>>;
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
  lwm2m?: DeviceManagement;
  /** Firmware over the air through LwM2M object 5 (jobs and campaigns). */
  fota?: FotaService;
  coap?: CoapChannel;
  mqtt?: MqttChannel;
}
