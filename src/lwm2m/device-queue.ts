import type { Endpoint } from '../domain/endpoints.js';
import { AppError } from '../errors.js';
import type { OperationRequest, OperationResult } from './operations.js';
import type { HeldRequest } from './queue-store.js';

/** At most this many requests wait for one device. */
export const MAX_QUEUED_PER_DEVICE = 100;

/** setTimeout takes at most 2^31-1 ms (24.8 days); longer waits are re-armed. */
const MAX_TIMER_MS = 2_147_483_647;

/** How a request that waited ended. */
export type QueueOutcome =
  | { readonly delivered: OperationResult }
  | { readonly failed: unknown }
  | { readonly expired: AppError }
  | { readonly purged: AppError };

/** One request waiting for a device. */
export interface QueueEntry {
  readonly request: OperationRequest;
  /** Epoch ms: not sent after it, and ended as expired. */
  readonly expiresAt: number;
  /**
   * `purge`: a new registration of the device ends it (SPEC States); `keep`: it waits through registrations
   * (lwm2m.proxy_send), and a device that does not answer gets it again at its next wake-up until it expires.
   */
  readonly lifecycle: 'purge' | 'keep';
  /** Told once how it ended. */
  readonly settle: (outcome: QueueOutcome) => void;
  /** `directToQueue`: sent only when the device is heard from after it was queued, never by a request's own drain. */
  readonly waitsForWake?: boolean;
  /** A request held in the store (`lwm2m.proxy_send`, requests with a context). */
  readonly held?: HeldRequest;
  readonly createdAt: number;
}

interface Waiting extends QueueEntry {
  timer?: NodeJS.Timeout;
  /** performance.now() when it was queued. */
  queuedAt: number;
}

interface PerDevice {
  endpoint: Endpoint;
  readonly entries: Waiting[];
  draining: boolean;
}

/**
 * The requests waiting for each device (SPEC States: queue mode, a device that cannot be reached,
 * `directToQueue`), sent one at a time, in order, while the device is registered and awake. What waits and
 * how it ends is the caller's business (`settle`): a waiting HTTP caller, or an `lwm2m-result` event.
 */
export class DeviceQueue {
  readonly #devices = new Map<string, PerDevice>();
  readonly #canSend: (endpointId: string) => boolean;
  readonly #send: (endpoint: Endpoint, request: OperationRequest) => Promise<OperationResult>;

  constructor(deps: { canSend: (endpointId: string) => boolean; send: (endpoint: Endpoint, request: OperationRequest) => Promise<OperationResult> }) {
    this.#canSend = deps.canSend;
    this.#send = deps.send;
  }

  /** How many requests wait for the device. */
  size(endpointId: string): number {
    return this.#devices.get(endpointId)?.entries.length ?? 0;
  }

  /** What waits for the device, in order. */
  list(endpointId: string): readonly QueueEntry[] {
    return this.#devices.get(endpointId)?.entries ?? [];
  }

  /** Throws `IOTB_LWM2M_QUEUE_FULL` when the device has as many waiting as it may. */
  checkRoom(endpointId: string): void {
    if (this.size(endpointId) >= MAX_QUEUED_PER_DEVICE) throw new AppError('IOTB_LWM2M_QUEUE_FULL', undefined, { limit: MAX_QUEUED_PER_DEVICE });
  }

  /** Adds a request behind the others (`force`: even past the per-device limit, for requests taken up after a restart). */
  add(endpoint: Endpoint, entry: QueueEntry, force = false): void {
    if (!force) this.checkRoom(endpoint.id);
    let device = this.#devices.get(endpoint.id);
    if (!device) {
      device = { endpoint, entries: [], draining: false };
      this.#devices.set(endpoint.id, device);
    }
    device.endpoint = endpoint;
    const waiting: Waiting = { ...entry, queuedAt: performance.now() };
    device.entries.push(waiting);
    this.#arm(endpoint.id, waiting);
  }

  /**
   * Sends what waits for a device, one request at a time, while it stays registered and awake. `heardAt`
   * (performance.now()): the device was heard from then (a wake-up); without it, or for a `waitsForWake`
   * request queued after it, the queue stops there and the rest waits for the next wake-up.
   */
  async drain(endpointId: string, heardAt?: number): Promise<void> {
    const device = this.#devices.get(endpointId);
    if (!device || device.draining) return;
    device.draining = true;
    try {
      for (;;) {
        const next = device.entries[0];
        if (!next || !this.#canSend(endpointId)) break;
        if (next.waitsForWake && (heardAt === undefined || heardAt < next.queuedAt)) break;
        device.entries.shift();
        clearTimeout(next.timer);
        try {
          next.settle({ delivered: await this.#send(device.endpoint, next.request) });
        } catch (error) {
          const asleep = error instanceof AppError && error.code === 'IOTB_LWM2M_TIMEOUT';
          if (asleep && next.lifecycle === 'keep' && Date.now() < next.expiresAt) {
            // No answer: it waits for the next wake-up (at least once: the device may have done it).
            device.entries.unshift(next);
            this.#arm(endpointId, next);
            break;
          }
          next.settle({ failed: error });
          if (asleep) break; // asleep again: the rest waits
        }
      }
    } finally {
      device.draining = false;
      if (device.entries.length === 0 && this.#devices.get(endpointId) === device) this.#devices.delete(endpointId);
    }
  }

  /** A new registration: what waits for the old one ends as purged (SPEC States); `keep` requests stay. */
  purge(endpointId: string): void {
    const device = this.#devices.get(endpointId);
    if (!device) return;
    const purged = device.entries.filter((entry) => entry.lifecycle === 'purge');
    device.entries.splice(0, device.entries.length, ...device.entries.filter((entry) => entry.lifecycle === 'keep'));
    if (device.entries.length === 0 && !device.draining) this.#devices.delete(endpointId);
    for (const entry of purged) {
      clearTimeout(entry.timer);
      entry.settle({ purged: new AppError('IOTB_LWM2M_QUEUE_PURGED') });
    }
  }

  /** Removes a waiting request, found by its `settle`, without ending it; false when it is no longer waiting (sent or ended). */
  withdraw(endpointId: string, settle: QueueEntry['settle']): boolean {
    const device = this.#devices.get(endpointId);
    const at = device?.entries.findIndex((entry) => entry.settle === settle) ?? -1;
    if (!device || at === -1) return false;
    const [entry] = device.entries.splice(at, 1);
    clearTimeout(entry!.timer);
    if (device.entries.length === 0 && !device.draining) this.#devices.delete(endpointId);
    return true;
  }

  /** Removes a waiting request by id without ending it (the caller says how). */
  take(endpointId: string, id: string): QueueEntry | undefined {
    const device = this.#devices.get(endpointId);
    const at = device?.entries.findIndex((entry) => entry.held?.id === id) ?? -1;
    if (!device || at === -1) return undefined;
    const [entry] = device.entries.splice(at, 1);
    clearTimeout(entry!.timer);
    if (device.entries.length === 0 && !device.draining) this.#devices.delete(endpointId);
    return entry;
  }

  /**
   * Another node of a cluster holds the device now: its waiting requests leave this node without ending (held ones
   * stay in the store, where that node takes them up); callers waiting here are told it moved.
   */
  release(endpointId: string): void {
    const device = this.#devices.get(endpointId);
    if (!device) return;
    this.#devices.delete(endpointId);
    for (const entry of device.entries) {
      clearTimeout(entry.timer);
      if (!entry.held) entry.settle({ failed: new AppError('IOTB_LWM2M_NOT_REGISTERED', 'The device moved to another node of the cluster before it could be reached; call again') });
    }
  }

  /** The process stops: held requests stay in the store for the next start; waiting callers are told. */
  stop(): void {
    const devices = [...this.#devices.values()];
    this.#devices.clear();
    for (const device of devices) {
      for (const entry of device.entries) {
        clearTimeout(entry.timer);
        if (!entry.held) entry.settle({ failed: new AppError('IOTB_LWM2M_NOT_REGISTERED', 'The LwM2M server stopped before the device could be reached') });
      }
    }
  }

  #arm(endpointId: string, entry: Waiting): void {
    clearTimeout(entry.timer);
    const left = entry.expiresAt - Date.now();
    entry.timer = setTimeout(() => {
      if (Date.now() < entry.expiresAt) return this.#arm(endpointId, entry);
      const device = this.#devices.get(endpointId);
      const at = device?.entries.indexOf(entry) ?? -1;
      if (!device || at === -1) return;
      device.entries.splice(at, 1);
      if (device.entries.length === 0 && !device.draining) this.#devices.delete(endpointId);
      const queuedMs = entry.expiresAt - entry.createdAt;
      entry.settle({ expired: new AppError('IOTB_LWM2M_TIMEOUT', 'The request waited in the device queue and the device did not wake up in time', { queuedMs }) });
    }, Math.max(0, Math.min(left, MAX_TIMER_MS)));
    entry.timer.unref();
  }
}
