import type { Logger } from 'pino';
import type { Accounts } from '../domain/accounts.js';
import type { Endpoint, EndpointStore, Endpoints, HeardFrom, JsonObject, PresenceChange } from '../domain/endpoints.js';
import type { Service, Services, ServiceType } from '../domain/services.js';
import { AppError } from '../errors.js';
import { createEvent } from '../events/event.js';
import type { EventBus } from '../events/event-bus.js';
import { parseRemoteAddr } from './payload.js';
import { SeenWrites } from './seen-writes.js';

/** How a device was heard from: which protocol, from where, and for how long it promises to stay. */
export interface DeviceContact {
  readonly protocol: ServiceType;
  /** `host:port` (IPv6 hosts in brackets), or another transport address such as a LoRa gateway. */
  readonly remoteAddr?: string | undefined;
  /** LwM2M registration lifetime: silence longer than this makes the device unavailable. */
  readonly lifetimeSeconds?: number | undefined;
}

/** Per account: whether its devices are served at all (a suspension), and whether one more message becomes an event (its rate). */
export interface DeviceGate {
  isSuspended(accountId: string): boolean;
  admitsDeviceEvent(accountId: string): boolean;
}

export interface DevicePresenceOptions {
  /** Super-Admin suspensions and limits (src/admin/); none: every account is served. */
  readonly gate?: DeviceGate | undefined;
  /** How often silent devices are looked for, default 5 s. */
  readonly sweepIntervalMs?: number | undefined;
  /** Cluster mode: this node's id, recorded with where each device was heard from (so calls are routed here). */
  readonly node?: string | undefined;
  readonly logger: Logger;
}

/**
 * The one place every device protocol records that a device connected, was heard from, or went away,
 * and emits the lifecycle events (`on-create`, `on-connect`, `on-disconnect`) and device events.
 * Endpoints without a connection of their own (LwM2M, UDP, LoRa) become `unavailable` when they stay
 * silent past their lifetime or `secondsBeforeMissing`; a sweep finds them.
 */
export class DevicePresence {
  readonly #endpoints: Endpoints;
  readonly #store: EndpointStore;
  readonly #accounts: Accounts;
  readonly #services: Services;
  readonly #bus: EventBus;
  readonly #logger: Logger;
  readonly #sweepIntervalMs: number;
  readonly #gate: DeviceGate | undefined;
  readonly #node: string | undefined;
  /** Connected devices heard from again within a second of their last write: written together, later. */
  readonly #seen: SeenWrites;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;

  constructor(
    domain: { endpoints: Endpoints; accounts: Accounts; services: Services },
    store: EndpointStore,
    bus: EventBus,
    options: DevicePresenceOptions,
  ) {
    this.#endpoints = domain.endpoints;
    this.#accounts = domain.accounts;
    this.#services = domain.services;
    this.#store = store;
    this.#bus = bus;
    this.#logger = options.logger;
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 5000;
    this.#gate = options.gate;
    this.#node = options.node;
    this.#seen = new SeenWrites((endpointId, change) => store.setPresence(endpointId, change), options.logger);
  }

  /** True while a Super-Admin has the account suspended: its devices are refused. */
  isSuspended(accountId: string): boolean {
    return this.#gate?.isSuspended(accountId) ?? false;
  }

  /**
   * Endpoints named `key` in services of `type` (a device logging in on a shared port); at most 10, all of
   * one account. A key belongs to the account that used it first: new endpoints cannot take another
   * account's key (`IOTB_ENDPOINT_KEY_IN_USE`), and where older data has such a clash the oldest endpoint's
   * account keeps the device, so a later tenant can neither deny it nor receive it. Devices of a suspended account
   * are not found (the protocol refuses them as unknown) unless `withSuspended`, for protocols that say why.
   */
  async findDevices(type: ServiceType, key: string, options: { withSuspended?: boolean } = {}): Promise<Endpoint[]> {
    const found = await this.#store.findDevices(type, key, 10);
    const owner = found[0]?.accountId;
    const owned = found.length > 1 ? found.filter((endpoint) => endpoint.accountId === owner) : found;
    return owner !== undefined && !options.withSuspended && this.isSuspended(owner) ? [] : owned;
  }

  /** Creates an endpoint for a device first seen by an auto-provisioning service, and emits `on-create`. */
  async provision(service: Service, key: string, init: { statusDetails?: JsonObject; parameters?: JsonObject } = {}): Promise<Endpoint> {
    if (this.isSuspended(service.accountId)) throw new AppError('IOTB_ACCOUNT_SUSPENDED', 'The account is suspended: its services provision no devices');
    const scope = await this.#accounts.platformScope(service.accountId, `service:${service.id}`);
    const endpoint = await this.#endpoints.create(scope, { key, serviceId: service.id, ...init });
    await this.emit(endpoint, 'on-create', { protocol: service.type, autoProvisioned: true });
    return endpoint;
  }

  /**
   * The device (re)connected or registered: `connected`, `remoteAddr` (and `lifetime`) status details, the
   * address sends go to, and `on-connect`. Returns the endpoint as now stored.
   */
  async connected(endpoint: Endpoint, contact: DeviceContact, data: JsonObject = {}): Promise<Endpoint> {
    const details: Record<string, string | number> = {};
    if (contact.remoteAddr !== undefined) details.remoteAddr = contact.remoteAddr;
    if (contact.lifetimeSeconds !== undefined) details.lifetime = contact.lifetimeSeconds;
    // Only what differs is written: a device registering again from where it was costs no status-details patch.
    return this.#connectedNow(endpoint, contact, { protocol: contact.protocol, ...details, ...data }, changedDetails(endpoint, details));
  }

  /** The device was heard from (a message, a keep-alive): it stays connected; no event. */
  async seen(endpoint: Endpoint, lifetimeSeconds?: number): Promise<Endpoint> {
    return this.#record(endpoint, lifetimeSeconds ?? lifetimeOf(endpoint));
  }

  /**
   * Where to send the device anything: the address it was last heard from on one of `protocols`, as
   * recorded here — never the `remoteAddr` status detail. 409 `IOTB_DEVICE_ADDRESS_UNKNOWN` before it was
   * heard from on those protocols (or after its address went to another device). One primary-key read.
   */
  async addressOf(endpoint: Endpoint, protocols: readonly ServiceType[]): Promise<{ host: string; port: number; remoteAddr: string }> {
    const heard = await this.#store.heardFrom(endpoint.id);
    const address = heard && (protocols as readonly string[]).includes(heard.protocol) ? parseRemoteAddr(heard.remoteAddr) : undefined;
    if (!heard || !address) throw new AppError('IOTB_DEVICE_ADDRESS_UNKNOWN');
    return { ...address, remoteAddr: heard.remoteAddr };
  }

  /** Cluster mode: the node whose socket last heard the device, where calls to it run; undefined in one process. */
  async heardBy(endpoint: Endpoint): Promise<string | undefined> {
    return (await this.#store.heardFrom(endpoint.id))?.node;
  }

  /** Another device now uses the device's address (SPEC: remoteAddr unset when re-used): nothing more is sent to it there. */
  async addressReused(endpoint: Endpoint): Promise<void> {
    this.#seen.forget(endpoint.id);
    await this.#store.forgetHeardFrom(endpoint.id);
    await this.#patchDetails(endpoint, { remoteAddr: null });
  }

  /** Status details a protocol owns (e.g. `remoteAddr: null` when the address now belongs to another device). */
  setDetails(endpoint: Endpoint, details: JsonObject): Promise<Endpoint> {
    return this.#patchDetails(endpoint, details);
  }

  /**
   * A keep-alive (CoAP ping) arrived; what it does is the service's keep-alive mode (SPEC "States"):
   * `do-nothing`, `statusDetail` (dateLastKeepAlive), `touch` (also seen: stays connected), `event` (also `coap-keepalive`).
   */
  async keepAlive(endpoint: Endpoint, mode: string, protocol: ServiceType): Promise<void> {
    if (mode === 'do-nothing') return;
    const now = new Date().toISOString();
    const updated = await this.#patchDetails(endpoint, { dateLastKeepAlive: now });
    if (mode === 'statusDetail') return;
    const seen = await this.seen(updated);
    if (mode === 'event') await this.emit(seen, 'coap-keepalive', { protocol, time: now });
  }

  /**
   * A device without a connection of its own (UDP, LoRa) sent something: `connected` (with `on-connect`)
   * when it was unavailable, otherwise only seen. `remoteAddr` and the protocol's own status `details`
   * (e.g. a LoRa devAddr) are written only when they changed, so the common case is one targeted write.
   */
  async heard(endpoint: Endpoint, contact: DeviceContact, details: Record<string, string> = {}): Promise<Endpoint> {
    const wanted: Record<string, string> = contact.remoteAddr === undefined ? details : { ...details, remoteAddr: contact.remoteAddr };
    const changed = changedDetails(endpoint, wanted);
    if (endpoint.state === 'connected') return this.#record(endpoint, contact.lifetimeSeconds ?? lifetimeOf(endpoint), contact, changed);
    const address = contact.remoteAddr === undefined ? {} : { remoteAddr: contact.remoteAddr };
    return this.#connectedNow(endpoint, contact, { protocol: contact.protocol, ...address }, changed);
  }

  /** The device went away (closed its connection, de-registered, went silent): `unavailable` and `on-disconnect`. */
  async disconnected(endpoint: Endpoint, protocol: ServiceType, reason: string): Promise<void> {
    const lastSeenAt = endpoint.lastSeenAt ?? new Date().toISOString();
    const change = { state: 'unavailable', lastSeenAt, missingAfter: null } as const;
    this.#seen.writing(endpoint.id, change, undefined, Date.now());
    await this.#store.setPresence(endpoint.id, change);
    await this.emit({ ...endpoint, state: 'unavailable' }, 'on-disconnect', { protocol, reason });
  }

  /**
   * Publishes a device event (`mqtt-publish`, `lwm2m-data`, …) of `endpoint`; resolves once it is durable. An event of
   * a suspended account, or over its events-per-second limit, is dropped (and counted by the gate).
   */
  emit(endpoint: Endpoint, type: string, data: unknown): Promise<void> {
    if (this.#gate && !this.#gate.admitsDeviceEvent(endpoint.accountId)) return Promise.resolve();
    const event = createEvent({
      type,
      accountId: endpoint.accountId,
      serviceId: endpoint.serviceId,
      endpointId: endpoint.id,
      endpointKey: endpoint.key,
      data,
    });
    return this.#bus.publish([event]);
  }

  /**
   * Cluster mode: `node` died (its bus leases expired). The devices whose connection it held (MQTT, TCP) are gone
   * with it: `unavailable` and `on-disconnect` (reason `node lost`), once across the nodes. Devices without a
   * connection of their own go missing by their lifetime, as always. Returns how many.
   */
  async nodeLost(node: string): Promise<number> {
    const lost = await this.#store.releaseHeardBy(node, ['mqtt', 'tcp']);
    for (const { endpoint, protocol } of lost) await this.emit(endpoint, 'on-disconnect', { protocol, reason: 'node lost' });
    if (lost.length > 0) this.#logger.warn({ node, devices: lost.length }, 'devices connected to a lost node are unavailable');
    return lost.length;
  }

  /** Starts the periodic search for devices that went silent. */
  start(): void {
    this.#timer ??= setInterval(() => {
      this.#sweeping ??= this.sweep()
        .then(() => undefined)
        .catch((error: unknown) => this.#logger.error({ err: error }, 'presence sweep failed'))
        .finally(() => (this.#sweeping = undefined));
    }, this.#sweepIntervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping;
    await this.#seen.flush();
  }

  /** Marks every connected endpoint silent past its deadline `unavailable` (`on-disconnect`, reason `missing`). */
  async sweep(now = new Date()): Promise<number> {
    // Deadlines still waiting to be written first: a device heard from a moment ago is not missing.
    await this.#seen.flush();
    let total = 0;
    for (;;) {
      const missing = await this.#store.listMissing(now.toISOString(), 200);
      for (const endpoint of missing) {
        const scope = await this.#accounts.platformScope(endpoint.accountId, 'presence');
        const service = await this.#services.get(scope, endpoint.serviceId);
        await this.disconnected(endpoint, service.type, 'missing');
        this.#logger.debug({ endpointId: endpoint.id, serviceId: service.id }, 'device went silent: unavailable');
      }
      total += missing.length;
      if (missing.length < 200) return total;
    }
  }

  async #connectedNow(endpoint: Endpoint, contact: DeviceContact, data: JsonObject, details?: Record<string, string | number>): Promise<Endpoint> {
    const seen = await this.#record(endpoint, contact.lifetimeSeconds, contact, details);
    await this.emit(seen, 'on-connect', data);
    return seen;
  }

  /** Connected and seen now; with a contact address, that is where sends go from now on (the same write). */
  /** Connected now; `details` (the protocol's own status details, e.g. remoteAddr) are written in the same statement. */
  async #record(endpoint: Endpoint, lifetimeSeconds: number | undefined, contact?: DeviceContact, details?: Record<string, string | number>): Promise<Endpoint> {
    const now = Date.now();
    const silence = silenceAllowed(endpoint, lifetimeSeconds);
    const lastSeenAt = new Date(now).toISOString();
    const missingAfter = silence === undefined ? null : new Date(now + silence * 1000).toISOString();
    const heardFrom: HeardFrom | undefined = contact?.remoteAddr === undefined ? undefined : { protocol: contact.protocol, remoteAddr: contact.remoteAddr, node: this.#node };
    const hasDetails = details !== undefined && Object.keys(details).length > 0;
    const change: PresenceChange = { state: 'connected', lastSeenAt, missingAfter, heardFrom, ...(hasDetails ? { details } : {}) };
    if (endpoint.state === 'connected' && !hasDetails && this.#seen.defer(endpoint.id, change, silence, now)) return { ...endpoint, lastSeenAt };
    this.#seen.writing(endpoint.id, change, silence, now);
    const statusDetails = await this.#store.setPresence(endpoint.id, change);
    return { ...endpoint, state: 'connected', lastSeenAt, ...(statusDetails ? { statusDetails, updatedAt: lastSeenAt } : {}) };
  }

  /** Writes status details the platform sets (remoteAddr, lifetime, dateLastKeepAlive, …): one targeted update, not a full endpoint save. */
  async #patchDetails(endpoint: Endpoint, details: JsonObject): Promise<Endpoint> {
    const updatedAt = new Date().toISOString();
    const statusDetails = await this.#store.mergeStatusDetails(endpoint.id, details, updatedAt);
    return statusDetails === undefined ? endpoint : { ...endpoint, statusDetails, updatedAt };
  }
}

/** The details whose values the endpoint does not hold already. */
function changedDetails(endpoint: Endpoint, wanted: Record<string, string | number>): Record<string, string | number> {
  return Object.fromEntries(Object.entries(wanted).filter(([name, value]) => endpoint.statusDetails[name] !== value));
}

function lifetimeOf(endpoint: Endpoint): number | undefined {
  const lifetime = endpoint.statusDetails.lifetime;
  return typeof lifetime === 'number' ? lifetime : undefined;
}

/** Seconds of silence before the device is missing: `secondsBeforeMissing` wins over the protocol's lifetime. */
function silenceAllowed(endpoint: Endpoint, lifetimeSeconds: number | undefined): number | undefined {
  const configured = endpoint.statusDetails.secondsBeforeMissing;
  if (typeof configured === 'number' && configured > 0) return configured;
  return lifetimeSeconds;
}
