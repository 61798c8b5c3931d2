import type { Logger } from 'pino';
import { contentFormat, formatPeer, uriPath, uriQuery, type CoapMessage, type CoapResponse, type Peer } from '../coap/index.js';
import { ThrottledLog } from '../devices/throttled-log.js';
import { CodecError, decode } from './codecs/index.js';
import type { DeviceAdmission } from './device-admission.js';
import { lwm2mRecordsToJson, translatedNames } from './json-values.js';
import type { LiveRegistrations } from './live-registrations.js';
import type { RegistrationAdoption } from './registration-adoption.js';
import { announcedObjects, newRegistrationId, parseRegister, parseUpdate, RegistrationError, type Registration } from './registration.js';
import type { RequestsToDevices } from './requests-to-devices.js';
import type { Lwm2mServerOptions } from './server.js';

/**
 * What devices send to the server (Core 6.2, 6.4.4): Register, Update and De-register on `/rd`, Send on `/dp`,
 * Bootstrap-Request on `/bs`, CoAP pings; downloads and other paths go to their handlers.
 */
export class RegistrationInterface {
  readonly #options: Lwm2mServerOptions;
  readonly #logger: Logger;
  /** Refused registrations: any peer can cause them, so they are logged sparingly. */
  readonly #refusals: ThrottledLog;
  /** Who may speak for which endpoint, over which channel. */
  readonly #admission: DeviceAdmission;
  readonly #live: LiveRegistrations;
  readonly #adoption: RegistrationAdoption;
  readonly #requests: RequestsToDevices;

  constructor(deps: { options: Lwm2mServerOptions; logger: Logger; admission: DeviceAdmission; live: LiveRegistrations; adoption: RegistrationAdoption; requests: RequestsToDevices }) {
    this.#options = deps.options;
    this.#logger = deps.logger;
    this.#refusals = new ThrottledLog(deps.logger);
    this.#admission = deps.admission;
    this.#live = deps.live;
    this.#adoption = deps.adoption;
    this.#requests = deps.requests;
  }

  async handle(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls'): Promise<CoapResponse> {
    const path = uriPath(request).replace(/^\//, '');
    this.#requests.heardOn(peer, via);
    try {
      if (path === 'rd' && request.code === '0.02') return await this.#register(request, peer, via);
      if (path.startsWith('rd/')) {
        const held = this.#live.table.get(path.slice(3));
        const registration = held ?? (await this.#adoption.adopt(path.slice(3)));
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
    const previous = this.#live.registrationOf(endpoint.id);
    if (previous) this.#live.forget(previous);
    this.#live.ended(endpoint.id);
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
    this.#live.remember(registration);
    this.#live.heard(registration);
    this.#options.cluster?.notices.publish('lwm2m-registrations', registration.endpointId);
    this.#live.registered(registration);
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
    setImmediate(() => this.#live.wake(registration, heardAt));
    return { code: '2.01', options: [{ number: 8, value: Buffer.from('rd') }, { number: 8, value: Buffer.from(registration.id) }] };
  }

  /** `adopted`: taken up from the store at this message, so this node now records that it hears the device. */
  async #update(current: Registration, request: CoapMessage, peer: Peer, adopted: boolean): Promise<CoapResponse> {
    const params = parseUpdate(uriQuery(request), request.payload, current);
    const endpoint = await this.#live.endpointOf(current);
    if (!endpoint) {
      this.#live.forget(current);
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
    this.#live.forget(current);
    this.#live.remember(updated);
    this.#live.heard(updated);
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
    setImmediate(() => this.#live.wake(updated, heardAt));
    return { code: '2.04' };
  }

  async #deregister(registration: Registration): Promise<CoapResponse> {
    this.#live.forget(registration);
    await this.#options.registrations.remove(registration.id);
    this.#live.ended(registration.endpointId);
    const endpoint = await this.#live.endpointOf(registration);
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
    const held = this.#live.table.at(peer);
    const registration = held ?? (await this.#adoption.adoptAt(peer));
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
    const endpoint = await this.#live.endpointOf(registration);
    if (!endpoint) return { code: '4.04' };
    // Taken up here: this node now records that it hears the device (calls to it are routed here).
    if (held) await this.#options.presence.seen(endpoint, registration.lifetime);
    else await this.#options.presence.heard(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: registration.lifetime });
    this.#live.heard(registration);
    const heardAt = performance.now();
    setImmediate(() => this.#live.wake(registration, heardAt));
    await this.#options.presence.emit(endpoint, 'lwm2m-data', {
      operation: 'send',
      objectIds: [...new Set(records.map((r) => Number(r.path.split('/')[1])))],
      values: lwm2mRecordsToJson(records),
      names: translatedNames(this.#options.objects.lookupFor(registration.accountId), records),
    });
    return { code: '2.04' };
  }

  /** CoAP ping (empty CON) from a registered device: the service's keep-alive mode (SPEC States). */
  async onPing(peer: Peer): Promise<void> {
    const registration = this.#live.table.at(peer);
    if (!registration) return;
    this.#live.heard(registration);
    this.#live.wake(registration, performance.now());
    const endpoint = await this.#live.endpointOf(registration);
    if (!endpoint) return;
    const service = (await this.#options.lwm2mServices()).find((s) => s.id === endpoint.serviceId);
    const mode = service?.options.keepAliveMode ?? 'statusDetail';
    try {
      await this.#options.presence.keepAlive(endpoint, mode, 'lwm2m');
    } catch (error) {
      this.#logger.warn({ err: error, endpointId: endpoint.id }, 'keep-alive handling failed');
    }
  }
}
