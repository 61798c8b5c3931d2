import type { Logger } from 'pino';
import { CoapEndpoint, type CoapMessage, type CoapResponse, type Observation, type ObserveOptions, type Peer } from '../coap/index.js';
import { ConfigError, ENV_NAMES } from '../config.js';
import type { Transport } from '../coap/transport.js';
import type { DeviceServer } from '../devices/device-server.js';
import type { DevicePresence } from '../devices/presence.js';
import type { Lwm2mCluster } from './lwm2m-cluster.js';
import type { Logs } from '../logs/logs.js';
import type { SendGuard } from '../devices/send-guard.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Service } from '../domain/services.js';
import { DeviceAdmission } from './device-admission.js';
import { LiveRegistrations } from './live-registrations.js';
import type { ObjectRegistry } from './objects/registry.js';
import { RegistrationAdoption } from './registration-adoption.js';
import { RegistrationInterface } from './registration-interface.js';
import type { RegistrationStore } from './registration-store.js';
import type { Registration } from './registration.js';
import { RequestsToDevices } from './requests-to-devices.js';

export interface Lwm2mServerOptions {
  /** UDP port of the CoAP listener; 0 picks a free one. */
  readonly port: number;
  /** Bind address; undefined: dual-stack `::` (IPv4 too). */
  readonly host?: string | undefined;
  readonly logger: Logger;
  readonly presence: DevicePresence;
  /** The accounts' logs: what devices send that cannot be read is told to their account. */
  readonly logs?: Pick<Logs, 'device'> | undefined;
  readonly objects: ObjectRegistry;
  /** The LwM2M services across accounts (auto-provisioning, `forceQueueMode`, keep-alive mode). */
  readonly lwm2mServices: () => Promise<readonly Service[]>;
  /** Refuses requests to a registration address no device can have (a spoofed Register from a broadcast or own port). */
  readonly sendGuard?: SendGuard | undefined;
  /**
   * How long a device in queue mode stays reachable after it was last heard from (Core 6.5 / Transport
   * 6.3.1: the client listens for at least MAX_TRANSMIT_WAIT, 93 s, after sending). Default 93 000 ms.
   */
  readonly awakeMs?: number | undefined;
  /** Bootstrap-Requests (`POST /bs`) of known devices (bootstrap/bootstrap-server.ts); 4.04 without. */
  readonly bootstrap?: ((request: CoapMessage, peer: Peer, endpoint: Endpoint, service: Service) => Promise<CoapResponse>) | undefined;
  /** `/download/<token>[/…]`: repository files by download link (file-downloads.ts), for any peer; 4.04 without. */
  readonly downloads?: ((request: CoapMessage) => Promise<CoapResponse>) | undefined;
  /** Requests to other paths than the LwM2M interfaces (plain CoAP devices); 4.04 without. */
  readonly otherRequests?: ((request: CoapMessage, peer: Peer, via: 'udp' | 'dtls') => Promise<CoapResponse>) | undefined;
  /**
   * CoAPS (RFC 7252 9.1): a DTLS transport carrying the same interfaces on `port`, and what it knows of a
   * peer's association. Absent: plain CoAP only.
   */
  readonly secure?:
    | { readonly transport: Transport; readonly port: number; readonly sessionOf: (peer: Peer) => { readonly pskIdentity?: string | undefined; readonly peerCertificates?: readonly Buffer[] | undefined } | undefined }
    | undefined;
  /** An endpoint's DTLS security (mode and PSK identity); a device with one must use it. */
  readonly securityOf?: ((endpointId: string) => Promise<{ readonly mode: string; readonly pskIdentity?: string | undefined } | undefined>) | undefined;
  /** Lets tests shorten CoAP retransmission. */
  readonly coap?: ConstructorParameters<typeof CoapEndpoint>[0];
  /** Where registrations are kept across restarts; each change is written before the device hears the answer. */
  readonly registrations: RegistrationStore;
  /** Cluster mode: this node restores only the registrations of devices it heard last, and lets go of a device another node takes. */
  readonly cluster?: Lwm2mCluster | undefined;
}

/**
 * The LwM2M server (OMA LwM2M Core/Transport 1.0–1.2) on the CoAP endpoint: the registration interface
 * (`/rd`), the client's Send (`/dp`), CoAP pings for keep-alive; device management requests go out
 * through {@link Lwm2mServer.send}. Registrations are held in memory and written to the
 * `RegistrationStore` before the device is answered, and read back at start: after a restart (or kill -9)
 * a device's next Update to `/rd/<id>` is answered 2.04 and requests reach it at its recorded address.
 */
export class Lwm2mServer implements DeviceServer {
  readonly name = 'coap';
  readonly #options: Lwm2mServerOptions;
  /** Who may speak for which endpoint, over which channel. */
  readonly #admission: DeviceAdmission;
  readonly #coap: CoapEndpoint;
  /** The CoAPS endpoint, when DTLS is on. */
  readonly #coaps: CoapEndpoint | undefined;
  /** The registrations this node holds, and the listeners to their changes. */
  readonly #live: LiveRegistrations;
  /** Requests to devices, over the endpoint each came by. */
  readonly #requests: RequestsToDevices;
  /** Registrations taken up from another node, or let go to one (cluster mode). */
  readonly #adoption: RegistrationAdoption;
  /** What devices send: Register, Update, De-register, Send, Bootstrap-Request, pings. */
  readonly #interface: RegistrationInterface;

  constructor(options: Lwm2mServerOptions) {
    this.#options = options;
    const logger = options.logger.child({ server: 'lwm2m' });
    this.#admission = new DeviceAdmission(options);
    this.#coap = new CoapEndpoint({ host: options.host, port: options.port, logger, ...options.coap });
    this.#coap.onRequest((request, peer) => this.#interface.handle(request, peer, 'udp'));
    this.#coap.onPing((peer) => void this.#interface.onPing(peer));
    if (options.secure) {
      this.#coaps = new CoapEndpoint({ transport: options.secure.transport, logger, ...options.coap });
      this.#coaps.onRequest((request, peer) => this.#interface.handle(request, peer, 'dtls'));
      this.#coaps.onPing((peer) => void this.#interface.onPing(peer));
    }
    this.#live = new LiveRegistrations(options, logger);
    this.#requests = new RequestsToDevices(options, this.#coap, this.#coaps);
    this.#adoption = new RegistrationAdoption(options, logger, this.#live);
    this.#interface = new RegistrationInterface({ options, logger, admission: this.#admission, live: this.#live, adoption: this.#adoption, requests: this.#requests });
    options.cluster?.notices.listen('lwm2m-registrations', (endpointId) => this.#adoption.release(endpointId));
  }

  async start(): Promise<Record<string, number>> {
    await this.#live.restore();
    try {
      await this.#coap.start();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new ConfigError(`CoAP port ${this.#options.port} is already in use: set ${ENV_NAMES.coapPort} to a free port (0 picks one)`);
      }
      throw error;
    }
    if (this.#coaps) {
      try {
        await this.#coaps.start();
      } catch (error) {
        await this.#coap.stop();
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new ConfigError(`CoAPS port ${this.#options.secure!.port} is already in use: set ${ENV_NAMES.coapsPort} to a free port (0 picks one)`);
        }
        throw error;
      }
    }
    return { coap: this.#coap.address().port, ...(this.#coaps && { coaps: this.#coaps.address().port }) };
  }

  async stop(): Promise<void> {
    await this.#coap.stop();
    await this.#coaps?.stop();
  }

  /** The CoAP endpoint the server listens on (plain CoAP devices share it). */
  get coap(): CoapEndpoint {
    return this.#coap;
  }

  /** The endpoint a peer was last heard on (CoAPS for a DTLS peer), to answer and request it the same way. */
  coapFor(peer: Peer): CoapEndpoint {
    return this.#requests.coapFor(peer);
  }

  /** The live registration of an endpoint, if it has one. */
  registrationOf(endpointId: string): Registration | undefined {
    return this.#live.registrationOf(endpointId);
  }

  /** A device (re)registered: what was queued for its previous registration is purged (SPEC States). */
  onRegistered(listener: (registration: Registration) => void): void {
    this.#live.onRegistered(listener);
  }

  /** A registered device was heard from (update, Send, ping): queued requests may go now. */
  onAwake(listener: (registration: Registration, heardAt: number) => void): void {
    this.#live.onAwake(listener);
  }

  /** Whether a request sent now can reach the device: always unless it is in queue mode and asleep. */
  isAwake(registration: Registration): boolean {
    return this.#live.isAwake(registration);
  }

  /** Sends a device management request to a registered device; resolves with its response (any code). */
  send(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], options: { timeoutMs: number; onExchange?: () => void }): Promise<CoapMessage> {
    return this.#requests.send(registration, request, options);
  }

  /** Takes up an observation made before a restart (nothing is sent; see CoapEndpoint.resumeObservation). */
  resumeObservation(registration: Registration, token: Buffer, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, onEnd: ObserveOptions['onEnd']): Observation {
    return this.#requests.resumeObservation(registration, token, request, onNotification, onEnd);
  }

  /** The options of the registration's service (`preferredFormat`, `coapMaxMessageSize`, …); undefined if it is gone. */
  async serviceOptions(registration: Registration): Promise<Service['options'] | undefined> {
    return (await this.#options.lwm2mServices()).find((s) => s.id === registration.serviceId)?.options;
  }

  /** Observes a resource of a registered device (RFC 7641): resolves with the first response and the observation. */
  observe(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, options: { timeoutMs: number; onEnd?: ObserveOptions['onEnd'] }): Promise<Observation> {
    return this.#requests.observe(registration, request, onNotification, options);
  }

  /**
   * A notification reached this node for an observation it does not hold (see CoapEndpoint.onStrayNotification):
   * `handler` says whether it now holds it. Device management takes the observation up (takeUpFor below).
   */
  onStrayNotification(handler: (token: string, peer: Peer) => Promise<boolean>): void {
    this.#coap.onStrayNotification(handler);
    this.#coaps?.onStrayNotification(handler);
  }

  /**
   * The registration `id` for a message from `peer`, taken up from the store when another node made it (a
   * notification that reaches this node first); undefined when it is not live or was made from another address.
   */
  takeUpFor(id: string, peer: Peer): Promise<Registration | undefined> {
    return this.#adoption.takeUpFor(id, peer);
  }

  /** A registration another node made (or this node before it knew) was taken up here at the device's message. */
  onAdopted(listener: (registration: Registration) => void): void {
    this.#adoption.onAdopted(listener);
  }

  /** Another node registered or took up the device: what this node held for it is let go (memory only; the store stays). */
  onReleased(listener: (endpointId: string) => void): void {
    this.#adoption.onReleased(listener);
  }

  /** Cluster mode: whether what this node does not hold may be held by another (so the store keeps it). */
  get clustered(): boolean {
    return this.#options.cluster !== undefined;
  }

  /**
   * Calls `listener(endpointId)` when a device's registration ends: a new Register (which replaces the old
   * one) or a De-register. Observations end with the registration (Core 6.4.1).
   */
  onRegistrationEnd(listener: (endpointId: string) => void): void {
    this.#live.onRegistrationEnd(listener);
  }

  /** Ends the account's registrations (suspended): each device's next Update gets 4.04 and its new Register is refused. */
  closeAccount(accountId: string): Promise<number> {
    return this.#live.closeAccount(accountId);
  }

  /** Why a peer may not speak for an endpoint, or undefined when it may (see DeviceAdmission.refusal). */
  refusal(endpoint: Endpoint, service: Pick<Service, 'options'>, peer: Peer, via: 'udp' | 'dtls'): Promise<string | undefined> {
    return this.#admission.refusal(endpoint, service, peer, via);
  }
}
