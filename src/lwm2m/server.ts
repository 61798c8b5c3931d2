import type { Logger } from 'pino';
import {
  CoapEndpoint,
  contentFormat,
  encodeBlock,
  formatPeer,
  option,
  OptionNumber,
  szxFor,
  uriPath,
  uriQuery,
  type CoapMessage,
  type CoapResponse,
  type Observation,
  type ObserveOptions,
  type Peer,
} from '../coap/index.js';
import { ConfigError, ENV_NAMES } from '../config.js';
import type { Transport } from '../coap/transport.js';
import type { DeviceServer } from '../devices/device-server.js';
import type { DevicePresence } from '../devices/presence.js';
import type { Lwm2mCluster } from './lwm2m-cluster.js';
import type { Logs } from '../logs/logs.js';
import type { SendGuard } from '../devices/send-guard.js';
import { ThrottledLog } from '../devices/throttled-log.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Service } from '../domain/services.js';
import { CodecError, decode } from './codecs/index.js';
import { DeviceAdmission } from './device-admission.js';
import { RegistrationTable } from './registration-table.js';
import { lwm2mRecordsToJson, translatedNames } from './json-values.js';
import type { ObjectRegistry } from './objects/registry.js';
import type { RegistrationStore } from './registration-store.js';
import {
  announcedObjects,
  newRegistrationId,
  parseRegister,
  parseUpdate,
  RegistrationError,
  type Registration,
} from './registration.js';

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
  readonly #logger: Logger;
  /** Refused registrations: any peer can cause them, so they are logged sparingly. */
  readonly #refusals: ThrottledLog;
  /** Who may speak for which endpoint, over which channel. */
  readonly #admission: DeviceAdmission;
  readonly #coap: CoapEndpoint;
  /** The CoAPS endpoint, when DTLS is on. */
  readonly #coaps: CoapEndpoint | undefined;
  /** Which endpoint each peer was last heard on: answers and requests to it go back the same way. */
  readonly #via = new Map<string, 'udp' | 'dtls'>();
  /** The registrations this node holds, and when each device was last heard from (queue mode). */
  readonly #table = new RegistrationTable();
  readonly #listeners: { registered: ((r: Registration) => void)[]; awake: ((r: Registration, heardAt: number) => void)[] } = { registered: [], awake: [] };
  readonly #registrationEnded: ((endpointId: string) => void)[] = [];
  readonly #adopted: ((registration: Registration) => void)[] = [];
  readonly #released: ((endpointId: string) => void)[] = [];

  constructor(options: Lwm2mServerOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ server: 'lwm2m' });
    this.#refusals = new ThrottledLog(this.#logger);
    this.#admission = new DeviceAdmission(options);
    this.#coap = new CoapEndpoint({ host: options.host, port: options.port, logger: this.#logger, ...options.coap });
    this.#coap.onRequest((request, peer) => this.#handle(request, peer, 'udp'));
    this.#coap.onPing((peer) => void this.#onPing(peer));
    if (options.secure) {
      this.#coaps = new CoapEndpoint({ transport: options.secure.transport, logger: this.#logger, ...options.coap });
      this.#coaps.onRequest((request, peer) => this.#handle(request, peer, 'dtls'));
      this.#coaps.onPing((peer) => void this.#onPing(peer));
    }
    options.cluster?.notices.listen('lwm2m-registrations', (endpointId) => this.#release(endpointId));
  }

  async start(): Promise<Record<string, number>> {
    await this.#restore();
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

  /** Registrations stored before the last stop (or crash): those still within their lifetime are live again. */
  async #restore(): Promise<void> {
    const now = Date.now();
    // In a cluster, the devices this node heard last; the others are taken up where their next message arrives.
    for (const registration of await this.#options.registrations.all(this.#options.cluster?.node)) {
      if (now > Date.parse(registration.updatedAt) + registration.lifetime * 1000) {
        await this.#options.registrations.remove(registration.id);
        continue;
      }
      // Queue mode: awake as when it was last heard from.
      this.#table.restore(registration, Date.parse(registration.updatedAt));
    }
    if (this.#table.size > 0) this.#logger.info({ registrations: this.#table.size }, 'LwM2M registrations restored');
  }

  /** The CoAP endpoint the server listens on (plain CoAP devices share it). */
  get coap(): CoapEndpoint {
    return this.#coap;
  }

  /** The endpoint a peer was last heard on (CoAPS for a DTLS peer), to answer and request it the same way. */
  coapFor(peer: Peer): CoapEndpoint {
    return this.#via.get(formatPeer(peer)) === 'dtls' && this.#coaps ? this.#coaps : this.#coap;
  }

  #endpointFor(registration: Registration): CoapEndpoint {
    return registration.secure && this.#coaps ? this.#coaps : this.#coap;
  }

  /** The live registration of an endpoint, if it has one. */
  registrationOf(endpointId: string): Registration | undefined {
    const registration = this.#table.ofEndpoint(endpointId);
    // Past its lifetime without an update the registration is over (Core 6.2.1); the presence sweep says so too.
    if (registration && Date.now() > Date.parse(registration.updatedAt) + registration.lifetime * 1000) return undefined;
    return registration;
  }

  /** A device (re)registered: what was queued for its previous registration is purged (SPEC States). */
  onRegistered(listener: (registration: Registration) => void): void {
    this.#listeners.registered.push(listener);
  }

  /** A registered device was heard from (update, Send, ping): queued requests may go now. */
  onAwake(listener: (registration: Registration, heardAt: number) => void): void {
    this.#listeners.awake.push(listener);
  }

  /** Whether a request sent now can reach the device: always unless it is in queue mode and asleep. */
  isAwake(registration: Registration): boolean {
    if (!registration.queueMode) return true;
    return Date.now() - (this.#table.heardAt(registration)) < (this.#options.awakeMs ?? 93_000);
  }

  /** Sends a device management request to a registered device; resolves with its response (any code). */
  async send(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], options: { timeoutMs: number; onExchange?: () => void }): Promise<CoapMessage> {
    this.#options.sendGuard?.check(registration.peer.address, registration.peer.port);
    const maxMessageSize = await this.#maxMessageSize(registration);
    // A smaller message size than the default also bounds what the device sends back: RFC 7959 2.4 early
    // negotiation, Block2 0/0/<size> on the request.
    const payloadLimit = maxMessageSize === undefined ? undefined : maxMessageSize - 128;
    const asksBody = request.code === '0.01' || request.code === '0.05';
    const withBlock2 =
      asksBody && payloadLimit !== undefined && payloadLimit < 1024
        ? { ...request, options: [...(request.options ?? []), option(OptionNumber.Block2, encodeBlock({ num: 0, more: false, szx: szxFor(payloadLimit) }))] }
        : request;
    return this.#endpointFor(registration).request(registration.peer, withBlock2, {
      timeout: options.timeoutMs,
      maxMessageSize,
      ...(options.onExchange && { onExchange: options.onExchange }),
    });
  }

  /** The service's "CoAP Max Message Size" (payload bytes) as the datagram size block-wise transfer starts above. */
  async #maxMessageSize(registration: Registration): Promise<number | undefined> {
    const service = (await this.#options.lwm2mServices()).find((s) => s.id === registration.serviceId);
    const payload = service?.options.coapMaxMessageSize;
    // Room for the header, token and options next to the payload (RFC 7252 4.6: 1152 for a 1024-byte payload).
    return typeof payload === 'number' && payload >= 16 ? payload + 128 : undefined;
  }

  /** Takes up an observation made before a restart (nothing is sent; see CoapEndpoint.resumeObservation). */
  resumeObservation(registration: Registration, token: Buffer, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, onEnd: ObserveOptions['onEnd']): Observation {
    return this.#endpointFor(registration).resumeObservation(registration.peer, token, request, onNotification, { onEnd });
  }

  /** The options of the registration's service (`preferredFormat`, `coapMaxMessageSize`, …); undefined if it is gone. */
  async serviceOptions(registration: Registration): Promise<Service['options'] | undefined> {
    return (await this.#options.lwm2mServices()).find((s) => s.id === registration.serviceId)?.options;
  }

  /** Observes a resource of a registered device (RFC 7641): resolves with the first response and the observation. */
  async observe(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, options: { timeoutMs: number; onEnd?: ObserveOptions['onEnd'] }): Promise<Observation> {
    this.#options.sendGuard?.check(registration.peer.address, registration.peer.port);
    return this.#endpointFor(registration).observe(registration.peer, request, onNotification, { timeout: options.timeoutMs, ...(options.onEnd && { onEnd: options.onEnd }) });
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
  async takeUpFor(id: string, peer: Peer): Promise<Registration | undefined> {
    const held = this.#table.get(id);
    const found = held ?? (await this.#options.registrations.get(id));
    if (!found || found.peer.address !== peer.address || found.peer.port !== peer.port) return undefined;
    if (held) return held;
    const registration = this.#takeUp(found);
    const endpoint = registration && (await this.#endpointOf(registration));
    if (endpoint) await this.#options.presence.heard(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: registration.lifetime });
    return registration;
  }

  /** A registration another node made (or this node before it knew) was taken up here at the device's message. */
  onAdopted(listener: (registration: Registration) => void): void {
    this.#adopted.push(listener);
  }

  /**
   * A message names a registration this node does not hold: in a cluster, one another node made, whose device
   * now reaches this node (the load balancer moved it, or that node died). It is taken up from the store when
   * it is still live, so the device goes on without registering again (docs/cluster.md).
   */
  async #adopt(id: string): Promise<Registration | undefined> {
    if (id === '' || id.length > 64) return undefined;
    return this.#takeUp(await this.#options.registrations.get(id));
  }

  /** The same at a Send, whose registration is known by the address it comes from. */
  async #adoptAt(peer: Peer): Promise<Registration | undefined> {
    return this.#takeUp(await this.#options.registrations.atPeer(peer.address, peer.port));
  }

  #takeUp(stored: Registration | undefined): Registration | undefined {
    if (!stored || Date.now() > Date.parse(stored.updatedAt) + stored.lifetime * 1000) return undefined;
    const id = stored.id;
    const held = this.#table.get(id);
    if (held) return held; // taken up meanwhile by another message of the device
    const replaced = this.#table.ofEndpoint(stored.endpointId);
    if (replaced) this.#forget(replaced);
    this.#remember(stored);
    this.#heard(stored);
    this.#logger.info({ registrationId: id, endpointId: stored.endpointId }, 'LwM2M registration taken up from the store (another node made it)');
    this.#options.cluster?.notices.publish('lwm2m-registrations', stored.endpointId);
    for (const listener of this.#adopted) listener(stored);
    return stored;
  }

  /** Another node registered or took up the device: what this node held for it is let go (memory only; the store stays). */
  onReleased(listener: (endpointId: string) => void): void {
    this.#released.push(listener);
  }

  #release(endpointId: string): void {
    const registration = this.#table.ofEndpoint(endpointId);
    if (registration) {
      this.#forget(registration);
      this.#logger.info({ registrationId: registration.id, endpointId }, 'LwM2M registration now held by another node');
    }
    for (const listener of this.#released) {
      try {
        listener(endpointId);
      } catch (error) {
        this.#logger.error({ err: error, endpointId }, 'LwM2M release listener failed');
      }
    }
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
    this.#registrationEnded.push(listener);
  }

  #registrationEnd(endpointId: string): void {
    for (const listener of this.#registrationEnded) {
      try {
        listener(endpointId);
      } catch (error) {
        this.#logger.error({ err: error, endpointId }, 'LwM2M registration-end listener failed');
      }
    }
  }

  async #handle(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls'): Promise<CoapResponse> {
    const path = uriPath(request).replace(/^\//, '');
    this.#via.set(formatPeer(peer), via);
    if (this.#via.size > 100_000) this.#via.delete(this.#via.keys().next().value!);
    try {
      if (path === 'rd' && request.code === '0.02') return await this.#register(request, peer, via);
      if (path.startsWith('rd/')) {
        const held = this.#table.get(path.slice(3));
        const registration = held ?? (await this.#adopt(path.slice(3)));
        if (!registration) return { code: '4.04', payload: 'no such registration: register again' };
        // A registration made over DTLS is updated over DTLS, by the same identity.
        if (!this.#admission.sameChannel(registration, peer, via)) return { code: '4.03', payload: 'registration refused' };
        if (request.code === '0.02') return await this.#update(registration, request, peer, held === undefined);
        if (request.code === '0.04') return await this.#deregister(registration);
        return { code: '4.05' };
      }
      if (path === 'dp' && request.code === '0.02') return await this.#sendOperation(request, peer, via);
      if (path === 'bs' && request.code === '0.02') return await this.#bootstrapRequest(request, peer, via);
      if (path === 'download' || path.startsWith('download/')) return this.#options.downloads ? await this.#options.downloads(request) : { code: '4.04' };
      return this.#options.otherRequests ? await this.#options.otherRequests(request, peer, via) : { code: '4.04' };
    } catch (error) {
      if (error instanceof RegistrationError) return { code: '4.00', payload: error.message };
      this.#logger.error({ err: error, peer: formatPeer(peer), path }, 'LwM2M request failed');
      return { code: '5.00' };
    }
  }

  async #register(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls'): Promise<CoapResponse> {
    const params = parseRegister(uriQuery(request), request.payload);
    const found = await this.#admission.admit(params.endpointName, peer, via);
    if (found.kind === 'refused') {
      this.#refusals.info(found.why, { ep: params.endpointName, peer: formatPeer(peer), why: found.why }, 'LwM2M registration refused');
      // The same answer whatever the reason: an unauthenticated peer learns nothing of which names exist.
      return { code: '4.03', payload: 'registration refused' };
    }
    const { endpoint, service } = found;
    // A new registration replaces the device's old one (Core 6.2.1).
    const previous = this.registrationOf(endpoint.id);
    if (previous) this.#forget(previous);
    this.#registrationEnd(endpoint.id);
    const now = new Date().toISOString();
    const registration: Registration = {
      ...params,
      queueMode: params.queueMode || (service.options.forceQueueMode ?? false),
      id: newRegistrationId(),
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      serviceId: endpoint.serviceId,
      peer,
      ...(via === 'dtls' && { secure: true, identity: this.#admission.identityOf(peer) }),
      registeredAt: now,
      updatedAt: now,
    };
    // Stored before anything else knows it: the device is told its location only once it survives a crash.
    await this.#options.registrations.add(registration);
    this.#remember(registration);
    this.#heard(registration);
    this.#options.cluster?.notices.publish('lwm2m-registrations', registration.endpointId);
    for (const listener of this.#listeners.registered) listener(registration);
    await this.#options.presence.connected(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: params.lifetime }, {
      registrationId: registration.id,
      lwm2mVersion: params.lwm2mVersion,
      binding: params.binding,
      queueMode: registration.queueMode,
      objects: announcedObjects(params),
    });
    this.#logger.debug({ ep: params.endpointName, registrationId: registration.id, peer: formatPeer(peer) }, 'LwM2M device registered');
    // Requests that wait through a registration (lwm2m.proxy_send) go out after the 2.01.
    const heardAt = performance.now();
    setImmediate(() => this.#wake(registration, heardAt));
    return { code: '2.01', options: [{ number: 8, value: Buffer.from('rd') }, { number: 8, value: Buffer.from(registration.id) }] };
  }

  /** `adopted`: taken up from the store at this message, so this node now records that it hears the device. */
  async #update(current: Registration, request: CoapMessage, peer: Peer, adopted: boolean): Promise<CoapResponse> {
    const params = parseUpdate(uriQuery(request), request.payload, current);
    const endpoint = await this.#endpointOf(current);
    if (!endpoint) {
      this.#forget(current);
      await this.#options.registrations.remove(current.id);
      return { code: '4.04', payload: 'the endpoint was deleted: register again' };
    }
    const service = (await this.#options.lwm2mServices()).find((s) => s.id === endpoint.serviceId);
    const moved = peer.address !== current.peer.address || peer.port !== current.peer.port;
    const updated: Registration = {
      ...current,
      ...params,
      // "Force Queue Mode" is reapplied on every update (SPEC States).
      queueMode: params.queueMode || (service?.options.forceQueueMode ?? false),
      peer,
      updatedAt: new Date().toISOString(),
    };
    this.#forget(current);
    this.#remember(updated);
    this.#heard(updated);
    await this.#options.registrations.update(updated);
    if (moved || params.lifetime !== current.lifetime) {
      await this.#options.presence.connected(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: params.lifetime }, { registrationId: updated.id, update: true });
    } else if (adopted) {
      await this.#options.presence.heard(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: params.lifetime });
    } else {
      await this.#options.presence.seen(endpoint, params.lifetime);
    }
    // Answer first: the device expects the 2.04 before the server's requests (Core 6.5, queue mode).
    const heardAt = performance.now();
    setImmediate(() => this.#wake(updated, heardAt));
    return { code: '2.04' };
  }

  /** Ends the account's registrations (suspended): each device's next Update gets 4.04 and its new Register is refused. */
  async closeAccount(accountId: string): Promise<number> {
    const ended = [...this.#table.all()].filter((registration) => registration.accountId === accountId);
    for (const registration of ended) {
      this.#forget(registration);
      await this.#options.registrations.remove(registration.id);
      this.#registrationEnd(registration.endpointId);
      // `withSuspended`: the look-up by name otherwise hides a suspended account's devices.
      const [endpoint] = (await this.#options.presence.findDevices('lwm2m', registration.endpointName, { withSuspended: true })).filter((e) => e.id === registration.endpointId);
      if (endpoint) await this.#options.presence.disconnected(endpoint, 'lwm2m', 'account suspended');
    }
    return ended.length;
  }

  async #deregister(registration: Registration): Promise<CoapResponse> {
    this.#forget(registration);
    await this.#options.registrations.remove(registration.id);
    this.#registrationEnd(registration.endpointId);
    const endpoint = await this.#endpointOf(registration);
    if (endpoint) await this.#options.presence.disconnected(endpoint, 'lwm2m', 'de-registered');
    return { code: '2.02' };
  }

  /**
   * Bootstrap-Request (Core "Bootstrap-Request Operation"): the endpoint name is resolved as a Register's is
   * (auto-provisioning included); an unknown or refused name gets the same 4.04 as a device without a
   * configuration, so a peer learns nothing of which names exist.
   */
  async #bootstrapRequest(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls'): Promise<CoapResponse> {
    const name = uriQuery(request).find((part) => part.startsWith('ep='))?.slice(3);
    if (!name) return { code: '4.00', payload: 'ep is missing' };
    if (!this.#options.bootstrap) return { code: '4.04', payload: 'no bootstrap configuration' };
    const found = await this.#admission.admit(name, peer, via);
    if (found.kind === 'refused') {
      this.#refusals.info(found.why, { ep: name, peer: formatPeer(peer), why: found.why }, 'LwM2M Bootstrap-Request refused');
      return { code: '4.04', payload: 'no bootstrap configuration' };
    }
    return this.#options.bootstrap(request, peer, found.endpoint, found.service);
  }

  /** LwM2M 1.1 Send (`/dp`, Core 6.4.4): the device pushes values; they become an `lwm2m-data` event. */
  async #sendOperation(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls'): Promise<CoapResponse> {
    const held = this.#registrationAt(peer);
    const registration = held ?? (await this.#adoptAt(peer));
    if (!registration) return { code: '4.04', payload: 'register first' };
    if (!this.#admission.sameChannel(registration, peer, via)) return { code: '4.03' };
    const format = contentFormat(request);
    if (format === undefined) return { code: '4.00', payload: 'Content-Format is missing' };
    let records;
    try {
      records = decode(format, request.payload, { basePath: '/', models: this.#options.objects.lookupFor(registration.accountId) });
    } catch (error) {
      const message = error instanceof CodecError ? error.message : `Content-Format ${format} is not supported`;
      this.#options.logs?.device({ accountId: registration.accountId, endpointId: registration.endpointId, endpointKey: registration.endpointName, message: `LwM2M Send refused: ${message}`, reason: 'lwm2m send', data: { format } });
      return error instanceof CodecError ? { code: '4.00', payload: error.message } : { code: '4.15' };
    }
    const endpoint = await this.#endpointOf(registration);
    if (!endpoint) return { code: '4.04' };
    // Taken up here: this node now records that it hears the device (calls to it are routed here).
    if (held) await this.#options.presence.seen(endpoint, registration.lifetime);
    else await this.#options.presence.heard(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: registration.lifetime });
    this.#heard(registration);
    const heardAt = performance.now();
    setImmediate(() => this.#wake(registration, heardAt));
    await this.#options.presence.emit(endpoint, 'lwm2m-data', {
      operation: 'send',
      objectIds: [...new Set(records.map((r) => Number(r.path.split('/')[1])))],
      values: lwm2mRecordsToJson(records),
      names: translatedNames(this.#options.objects.lookupFor(registration.accountId), records),
    });
    return { code: '2.04' };
  }

  /** CoAP ping (empty CON) from a registered device: the service's keep-alive mode (SPEC States). */
  async #onPing(peer: Peer): Promise<void> {
    const registration = this.#registrationAt(peer);
    if (!registration) return;
    this.#heard(registration);
    this.#wake(registration, performance.now());
    const endpoint = await this.#endpointOf(registration);
    if (!endpoint) return;
    const service = (await this.#options.lwm2mServices()).find((s) => s.id === endpoint.serviceId);
    const mode = service?.options.keepAliveMode ?? 'statusDetail';
    try {
      await this.#options.presence.keepAlive(endpoint, mode, 'lwm2m');
    } catch (error) {
      this.#logger.warn({ err: error, endpointId: endpoint.id }, 'keep-alive handling failed');
    }
  }

  /** Why a peer may not speak for an endpoint, or undefined when it may (see DeviceAdmission.refusal). */
  refusal(endpoint: Endpoint, service: Pick<Service, 'options'>, peer: Peer, via: 'udp' | 'dtls'): Promise<string | undefined> {
    return this.#admission.refusal(endpoint, service, peer, via);
  }

  async #endpointOf(registration: Registration): Promise<Endpoint | undefined> {
    const [endpoint] = (await this.#options.presence.findDevices('lwm2m', registration.endpointName)).filter((e) => e.id === registration.endpointId);
    return endpoint;
  }

  #registrationAt(peer: Peer): Registration | undefined {
    return this.#table.at(peer);
  }

  #remember(registration: Registration): void {
    const displaced = this.#table.add(registration);
    if (!displaced) return;
    // The address now belongs to this device: the registration that had it ends (SPEC: remoteAddr unset when re-used).
    void this.#options.registrations.remove(displaced.id).catch((error: unknown) => this.#logger.warn({ err: error, registrationId: displaced.id }, 'could not remove a displaced registration'));
    void this.#endpointOf(displaced)
      .then((endpoint) => endpoint && this.#options.presence.addressReused(endpoint))
      .catch((error: unknown) => this.#logger.warn({ err: error, endpointId: displaced.endpointId }, 'could not unset a re-used remoteAddr'));
  }

  #heard(registration: Registration): void {
    this.#table.heard(registration);
  }

  /** `heardAt` (performance.now()) is when the device was heard: requests made after it wait for the next time. */
  #wake(registration: Registration, heardAt: number): void {
    if (this.#table.get(registration.id) !== registration) return; // replaced or gone meanwhile
    for (const listener of this.#listeners.awake) listener(registration, heardAt);
  }

  #forget(registration: Registration): void {
    this.#table.remove(registration);
  }
}
