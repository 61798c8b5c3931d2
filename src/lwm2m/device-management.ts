import type { Logger } from 'pino';
import type { DevicePresence } from '../devices/presence.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { JsonRecord } from './json-values.js';
import { formatPath } from './model.js';
import type { LastKnownStore } from './last-known-store.js';
import type { Lwm2mChannel } from './lwm2m-channel.js';
import type { ObservationStore } from './observation-store.js';
import type { DeviceQueueStore } from './queue-store.js';
import type { ObjectRegistry } from './objects/registry.js';
import { DeviceObservations } from './device-observations.js';
import { DeviceQueue, type QueueOutcome } from './device-queue.js';
import { HeldRequests, type HeldSummary, type HoldOptions } from './held-requests.js';
import { OperationExchange } from './operation-exchange.js';
import { checkedPath, invalid, type OperationRequest, type OperationResult } from './operations.js';
import type { Registration } from './registration.js';
import { RequestEncoding } from './request-encoding.js';
import type { Lwm2mServer } from './server.js';

/**
 * Device management and information reporting towards registered devices (OMA LwM2M Core 6.3/6.4):
 * builds the CoAP request of each operation, maps the device's answer to a result or an `IOTB_LWM2M_*`
 * error, emits `lwm2m-data` for reads and keeps the last-known value of every resource read.
 * It decides when a request goes out (now, or from the device queue or the held requests); the exchange itself
 * is operation-exchange.ts's, the encoding request-encoding.ts's, observations device-observations.ts's.
 */
export class DeviceManagement implements Lwm2mChannel {
  readonly #server: Lwm2mServer;
  readonly #objects: ObjectRegistry;
  readonly #logger: Logger;
  /** Last-known values per endpoint and path, kept across restarts. */
  readonly #lastKnown: LastKnownStore;
  /** Requests waiting for a device in queue mode or without a registration. */
  readonly #queue: DeviceQueue;
  /** Requests whose outcome is an `lwm2m-result` event, kept across restarts. */
  readonly #held: HeldRequests;
  /** The formats each request goes out in, and its CoAP request. */
  readonly #encoding: RequestEncoding;
  /** Active observations, in memory and as stored for a restart. */
  readonly #observations: DeviceObservations;
  /** Active observations as stored, for a restart. */
  readonly #observationStore: ObservationStore;
  /** One request sent to the device now. */
  readonly #exchange: OperationExchange;

  constructor(deps: {
    server: Lwm2mServer;
    presence: DevicePresence;
    objects: ObjectRegistry;
    logger: Logger;
    lastKnown: LastKnownStore;
    observations: ObservationStore;
    queue: DeviceQueueStore;
    endpointById: (accountId: string, id: string) => Promise<Endpoint | undefined>;
  }) {
    this.#server = deps.server;
    this.#encoding = new RequestEncoding(deps.server);
    this.#observations = new DeviceObservations({ server: deps.server, presence: deps.presence, objects: deps.objects, logger: deps.logger, lastKnown: deps.lastKnown, observations: deps.observations, encoding: this.#encoding });
    this.#exchange = new OperationExchange({ server: deps.server, presence: deps.presence, objects: deps.objects, logger: deps.logger, lastKnown: deps.lastKnown, encoding: this.#encoding, observations: this.#observations });
    const canSend = (endpointId: string) => {
      const registration = this.#server.registrationOf(endpointId);
      return registration !== undefined && this.#server.isAwake(registration);
    };
    this.#queue = new DeviceQueue({ canSend, send: (endpoint, request) => this.#exchange.exchange(endpoint, request) });
    this.#held = new HeldRequests({ queue: this.#queue, store: deps.queue, emit: (endpoint, type, data) => deps.presence.emit(endpoint, type, data), endpointById: deps.endpointById, canSend, logger: deps.logger });
    this.#lastKnown = deps.lastKnown;
    this.#observationStore = deps.observations;
    this.#objects = deps.objects;
    this.#logger = deps.logger;
    this.#server.onRegistered((registration) => {
      this.#queue.purge(registration.endpointId);
      this.#encoding.forget(registration.endpointId);
      if (!this.#server.clustered) return;
      // In a cluster its held requests may have been made on another node: taken up from the store, and those the
      // new registration ends (all but proxy_send's) end here too.
      void this.#held
        .takeUp(registration.endpointId, registration.accountId, { registeredAt: Date.parse(registration.registeredAt) })
        .catch((error: unknown) => this.#logger.warn({ err: error, endpointId: registration.endpointId }, 'could not take up held LwM2M requests'));
    });
    // Another node registered or took up the device: its observations and waiting requests are that node's now.
    this.#server.onReleased((endpointId) => {
      this.#observations.release(endpointId);
      this.#queue.release(endpointId);
    });
    this.#server.onAwake((registration, heardAt) => void this.#queue.drain(registration.endpointId, heardAt));
    // A registration another node made: its held requests are taken up, then its observations go on here.
    this.#server.onAdopted((registration) => this.#observations.adopted(registration, this.#held.takeUp(registration.endpointId, registration.accountId)));
    // A notification for an observation another node made: its registration and observations go on here.
    this.#server.onStrayNotification((token, peer) => this.#observations.takeUpStray(token, peer));
    this.#server.onRegistrationEnd((endpointId) => this.#observations.registrationEnded(endpointId));
  }

  /** Calls `listener` with the values of every notification and first observe answer, after they are remembered. */
  onValues(listener: (endpoint: Endpoint, values: readonly JsonRecord[]) => void): void {
    this.#observations.onValues(listener);
  }

  /**
   * Calls `listener` with the new registration at every Register (not an Update), and with undefined when a
   * registration ends (a De-register, or just before a new Register replaces it).
   */
  onRegistrationChange(listener: (endpointId: string, registration: Registration | undefined) => void): void {
    this.#server.onRegistered((registration) => listener(registration.endpointId, registration));
    this.#server.onRegistrationEnd((endpointId) => listener(endpointId, undefined));
  }

  /** How many requests wait for the device. */
  queued(endpoint: Endpoint): number {
    return this.#queue.size(endpoint.id);
  }

  /**
   * Sends the request now when the device can be reached; otherwise (queue mode and asleep, no
   * registration, `directToQueue`, or earlier requests still waiting) it waits in the device queue until
   * the device's next update or Send, and then goes out in order (SPEC States). `onQueued` is told when
   * it waits. A new registration purges the queue: each waiting request fails with `IOTB_LWM2M_QUEUE_PURGED`.
   * `signal` withdraws a request still waiting when it aborts (it fails with the signal's reason); one already
   * sent runs to its answer.
   */
  async perform(endpoint: Endpoint, request: OperationRequest, hooks: { onQueued?: () => void; signal?: AbortSignal } = {}): Promise<OperationResult> {
    const path = checkedPath(request);
    // Forgetting an observation is the server's own business: it never waits for the device.
    if (request.operation === 'cancelObserve') return this.#observations.cancel(endpoint, request, formatPath(path));
    const { signal } = hooks;
    signal?.throwIfAborted();
    const registration = this.#server.registrationOf(endpoint.id);
    if (registration && !request.directToQueue && this.#queue.size(endpoint.id) === 0 && this.#server.isAwake(registration)) return this.#exchange.exchange(endpoint, request);
    const now = Date.now();
    let withdraw: (() => void) | undefined;
    const result = new Promise<OperationResult>((resolve, reject) => {
      const settle = (outcome: QueueOutcome) => {
        signal?.removeEventListener('abort', withdraw!);
        if ('delivered' in outcome) resolve(outcome.delivered);
        else if ('failed' in outcome) reject(outcome.failed instanceof Error ? outcome.failed : new Error(String(outcome.failed)));
        else reject('expired' in outcome ? outcome.expired : outcome.purged);
      };
      withdraw = () => {
        if (this.#queue.withdraw(endpoint.id, settle)) reject(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
      };
      this.#queue.add(endpoint, {
        request,
        createdAt: now,
        expiresAt: now + (request.queueTimeoutMs ?? request.timeoutMs),
        lifecycle: 'purge',
        waitsForWake: request.directToQueue,
        settle,
      });
    });
    signal?.addEventListener('abort', withdraw!, { once: true });
    hooks.onQueued?.();
    // Waiting behind requests of a device that is awake (or became so): start sending.
    if (!request.directToQueue) void this.#queue.drain(endpoint.id);
    return result;
  }

  /**
   * An asynchronous request (a context was given; `kind: 'proxy'` for lwm2m.proxy_send): stored, sent when
   * the device can take it, its outcome an `lwm2m-result` event with the context. Resolves once it is stored.
   */
  async hold(endpoint: Endpoint, request: OperationRequest, options: HoldOptions): Promise<{ id: string; queued: boolean }> {
    const path = checkedPath(request);
    if (request.operation === 'cancelObserve' || request.operation === 'observe' || request.operation === 'observeComposite') {
      throw invalid(`${request.operation} is not sent asynchronously: call it and wait for the answer`);
    }
    return this.#held.hold(endpoint, { ...request, path: formatPath(path) }, options);
  }

  /** The requests held for the device (asynchronous ones and lwm2m.proxy_send), in order. */
  heldRequests(endpoint: Endpoint): HeldSummary[] {
    return this.#held.list(endpoint.id);
  }

  /** Withdraws a held request before it is sent (an `lwm2m-result` says so); false when none waits with that id. */
  cancelHeld(endpoint: Endpoint, id: string): Promise<boolean> {
    return this.#held.cancel(endpoint, id);
  }

  /** Takes up, after a restart, the observations and held requests stored before it (registrations first). */
  async resume(): Promise<void> {
    if (!this.#server.clustered) {
      await this.#observations.resume(await this.#observationStore.all());
      await this.#held.resume();
      return;
    }
    // A cluster node: only what belongs to the registrations it restored (the devices it heard last). The rest is
    // another node's, or is taken up where the device's next message arrives; the store keeps it.
    const held = (stored: { endpointId: string; registrationId: string }) => this.#server.registrationOf(stored.endpointId)?.id === stored.registrationId;
    await this.#observations.resume((await this.#observationStore.all()).filter(held));
    await this.#held.resume((endpointId) => this.#server.registrationOf(endpointId) !== undefined);
  }

  /**
   * Cluster mode (Lwm2mOrphanSweep): ends what no node holds, namely held requests that expired before `before`
   * and the stored observations of registrations that are gone.
   */
  async endOrphans(before: number, limit: number): Promise<{ requests: number; observations: number }> {
    const requests = await this.#held.endOrphans(before, limit);
    const observations = await this.#observationStore.removeOrphans();
    return { requests, observations };
  }

  /** Stops the timers of what waits (the process stops). */
  stop(): void {
    this.#queue.stop();
  }

  registrationOf(endpoint: Endpoint): Registration | undefined {
    return this.#server.registrationOf(endpoint.id);
  }

  /** The name of an object as the endpoint's account knows it (shipped or uploaded definition). */
  objectName(endpoint: Endpoint, objectId: number): string | undefined {
    return this.#objects.lookupFor(endpoint.accountId).object(objectId)?.name;
  }

  /** The last value read or notified of each of the endpoint's resources, by path. */
  async lastKnown(endpoint: Endpoint): Promise<JsonRecord[]> {
    return (await this.#lastKnown.list(endpoint.id)).sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  }

  /** The endpoint's active observations (path, token, since). */
  observations(endpoint: Endpoint): { path: string; paths?: string[]; token: string; since: string }[] {
    return this.#observations.list(endpoint);
  }
}
