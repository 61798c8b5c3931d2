import type { Logger } from 'pino';
import type { Endpoint } from '../domain/endpoints.js';
import { newSortableId } from '../domain/ids.js';
import { AppError } from '../errors.js';
import type { DeviceQueue, QueueOutcome } from './device-queue.js';
import type { OperationRequest } from './operations.js';
import type { DeviceQueueStore, HeldKind, HeldRequest } from './queue-store.js';

/** lwm2m.proxy_send's time to live when the caller gives none (SPEC Limits: 14 days). */
export const PROXY_SEND_TTL_MS = 14 * 86_400_000;
/** The longest a held request may wait. */
export const MAX_HOLD_MS = 30 * 86_400_000;

export interface HoldOptions {
  /** Given back in every `lwm2m-result` event of the request. */
  readonly context: unknown;
  /** `queued`: an asynchronous request, purged by a new registration; `proxy`: lwm2m.proxy_send. */
  readonly kind: HeldKind;
  /** How long it may wait for the device before it ends as expired. */
  readonly ttlMs: number;
  /** Wait for the device's next update even when it is awake now. */
  readonly directToQueue?: boolean | undefined;
}

/** A held request as the API lists it. */
export interface HeldSummary {
  readonly id: string;
  readonly kind: HeldKind;
  readonly operation: string;
  readonly path: string;
  readonly context: unknown;
  readonly createdAt: string;
  readonly expiresAt: string;
}

interface Deps {
  readonly queue: DeviceQueue;
  readonly store: DeviceQueueStore;
  /** Publishes a device event; resolves once it is durable. */
  readonly emit: (endpoint: Endpoint, type: string, data: unknown) => Promise<void>;
  readonly endpointById: (accountId: string, id: string) => Promise<Endpoint | undefined>;
  /** Whether the device can be sent to now (registered and awake). */
  readonly canSend: (endpointId: string) => boolean;
  readonly logger: Logger;
}

/**
 * Requests whose caller does not wait for the answer (a context was given, or lwm2m.proxy_send): stored
 * before they are accepted, sent through the device queue, and ended by one `lwm2m-result` event each
 * (delivered, failed, expired, purged or cancelled) carrying the caller's context. A restart takes them up
 * from the store: they are delivered at the device's next update (at least once: a request the device got
 * just before a crash may come again).
 */
export class HeldRequests {
  readonly #deps: Deps;
  /** Ids hold() is storing and has not queued yet: takeUp must not read them back from the store as missing. */
  readonly #holding = new Set<string>();

  constructor(deps: Deps) {
    this.#deps = deps;
  }

  /** Stores the request and queues it; resolves with its id and whether it waits (an intermediate event says so). */
  async hold(endpoint: Endpoint, request: OperationRequest, options: HoldOptions): Promise<{ id: string; queued: boolean }> {
    const { queue } = this.#deps;
    queue.checkRoom(endpoint.id);
    const now = Date.now();
    const { queueTimeoutMs: _wait, directToQueue: _direct, ...operation } = request;
    const held: HeldRequest = { id: newSortableId(now), accountId: endpoint.accountId, endpointId: endpoint.id, kind: options.kind, request: operation, context: options.context ?? null, createdAt: now, expiresAt: now + options.ttlMs };
    this.#holding.add(held.id);
    try {
      await this.#deps.store.add(held);
    } finally {
      this.#holding.delete(held.id);
    }
    const sendsNow = !options.directToQueue && queue.size(endpoint.id) === 0 && this.#deps.canSend(endpoint.id);
    this.#enqueue(endpoint, held, true, options.directToQueue);
    if (!sendsNow) await this.#emit(endpoint, held, { intermediate: true, queued: true, operation: held.request.operation, path: held.request.path });
    if (!options.directToQueue) void queue.drain(endpoint.id);
    return { id: held.id, queued: !sendsNow };
  }

  /**
   * Takes up what was held before a restart (after the registrations are back): expired ones end now. `mine`: only
   * the devices it says (a cluster node takes up those it holds registrations for).
   */
  async resume(mine?: (endpointId: string) => boolean): Promise<number> {
    let resumed = 0;
    for (const held of await this.#deps.store.all()) {
      if (mine && !mine(held.endpointId)) continue;
      const endpoint = await this.#deps.endpointById(held.accountId, held.endpointId);
      if (!endpoint) {
        await this.#deps.store.remove(held.id);
        continue;
      }
      // Past their time they still end once, with an event, through the queue's own timer.
      this.#enqueue(endpoint, held, false);
      resumed++;
    }
    if (resumed > 0) this.#deps.logger.info({ requests: resumed }, 'LwM2M held requests resumed');
    return resumed;
  }

  /**
   * Cluster mode: the device registered with or moved to this node; what was held for it on another node (in the
   * store, not in memory here) waits here from now on, in order. `registeredAt` (epoch ms): the device registered
   * anew then, which ends the asynchronous requests made before it (purged), as in one process; those made since
   * are for the new registration.
   */
  async takeUp(endpointId: string, accountId: string, options: { registeredAt?: number } = {}): Promise<number> {
    const stored = await this.#deps.store.ofEndpoint(endpointId);
    // Read after the store: a request hold() queued meanwhile is known, one it is still writing is skipped.
    const known = new Set(this.#deps.queue.list(endpointId).flatMap(({ held }) => (held ? [held.id] : [])));
    const missing = stored.filter((held) => !known.has(held.id) && !this.#holding.has(held.id));
    if (missing.length === 0) return 0;
    const endpoint = await this.#deps.endpointById(accountId, endpointId);
    if (!endpoint) return 0;
    for (const held of missing) {
      if (options.registeredAt !== undefined && held.kind === 'queued' && held.createdAt < options.registeredAt) void this.#settled(endpoint, held, { purged: new AppError('IOTB_LWM2M_QUEUE_PURGED') });
      else this.#enqueue(endpoint, held, false);
    }
    this.#deps.logger.info({ endpointId, requests: missing.length }, 'LwM2M held requests taken up from the store');
    void this.#deps.queue.drain(endpointId);
    return missing.length;
  }

  /**
   * Cluster mode: ends the stored requests that expired before `before` and that no node holds (their device's node
   * died or let them go, and the device never came back), each with its `expired` event; how many. A node that holds
   * a request ends it by its own timer when it expires, so `before` lies a grace period in the past.
   */
  async endOrphans(before: number, limit: number): Promise<number> {
    let ended = 0;
    for (const held of await this.#deps.store.expiredBefore(before, limit)) {
      if (this.#deps.queue.list(held.endpointId).some((entry) => entry.held?.id === held.id)) continue; // this node's timer ends it
      const endpoint = await this.#deps.endpointById(held.accountId, held.endpointId);
      if (!endpoint) await this.#deps.store.remove(held.id);
      else await this.#settled(endpoint, held, { expired: new AppError('IOTB_LWM2M_TIMEOUT', 'The request waited for the device and the device did not come back before it expired', { queuedMs: held.expiresAt - held.createdAt }) });
      ended++;
    }
    if (ended > 0) this.#deps.logger.info({ requests: ended }, 'LwM2M held requests nobody held ended as expired');
    return ended;
  }

  /** What is held for the device, in order. */
  list(endpointId: string): HeldSummary[] {
    return this.#deps.queue.list(endpointId).flatMap(({ held }) =>
      held === undefined
        ? []
        : [{ id: held.id, kind: held.kind, operation: held.request.operation, path: held.request.path, context: held.context, createdAt: new Date(held.createdAt).toISOString(), expiresAt: new Date(held.expiresAt).toISOString() }],
    );
  }

  /** Withdraws a request that waits; it ends with a `cancelled` event. False when none waits with that id. */
  async cancel(endpoint: Endpoint, id: string): Promise<boolean> {
    const entry = this.#deps.queue.take(endpoint.id, id);
    if (!entry) return false;
    const held = entry.held!;
    await this.#deps.store.remove(held.id);
    await this.#emit(endpoint, held, { success: false, outcome: 'cancelled', operation: held.request.operation, path: held.request.path, error: errorBody(new AppError('IOTB_LWM2M_CANCELLED')) });
    return true;
  }

  #enqueue(endpoint: Endpoint, held: HeldRequest, checked: boolean, waitsForWake?: boolean): void {
    const entry = {
      held,
      request: held.request,
      createdAt: held.createdAt,
      expiresAt: held.expiresAt,
      lifecycle: held.kind === 'proxy' ? ('keep' as const) : ('purge' as const),
      waitsForWake,
      settle: (outcome: QueueOutcome) => void this.#settled(endpoint, held, outcome),
    };
    this.#deps.queue.add(endpoint, entry, !checked);
  }

  async #settled(endpoint: Endpoint, held: HeldRequest, outcome: QueueOutcome): Promise<void> {
    const { operation, path } = held.request;
    try {
      // The event first: if the process dies between the two, the request is sent again rather than lost.
      if ('delivered' in outcome) await this.#emit(endpoint, held, { success: true, outcome: 'delivered', ...outcome.delivered });
      else {
        const [name, error] = 'failed' in outcome ? ['failed', outcome.failed] : 'expired' in outcome ? ['expired', outcome.expired] : ['purged', outcome.purged];
        await this.#emit(endpoint, held, { success: false, outcome: name, operation, path, error: errorBody(error) });
      }
      await this.#deps.store.remove(held.id);
    } catch (error) {
      this.#deps.logger.warn({ err: error, endpointId: endpoint.id, id: held.id }, 'could not end a held LwM2M request');
    }
  }

  #emit(endpoint: Endpoint, held: HeldRequest, data: Record<string, unknown>): Promise<void> {
    return this.#deps.emit(endpoint, 'lwm2m-result', { context: held.context, id: held.id, ...(held.kind === 'proxy' && { proxy: true }), intermediate: false, ...data });
  }
}

function errorBody(error: unknown): { code: string; message: string; details?: unknown } {
  return error instanceof AppError ? { code: error.code, message: error.message, ...(error.details !== undefined && { details: error.details }) } : { code: 'IOTB_INTERNAL', message: String(error) };
}
