import type { OperationRequest } from './operations.js';

/** `queued`: purged by the device's next registration (SPEC States); `proxy`: waits through it until it expires. */
export type HeldKind = 'queued' | 'proxy';

/** A request held for a device whose outcome becomes an `lwm2m-result` event: enough to send it after a restart. */
export interface HeldRequest {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly kind: HeldKind;
  /** The operation (`timeoutMs`: how long each attempt waits for the device's answer). */
  readonly request: Omit<OperationRequest, 'queueTimeoutMs' | 'directToQueue'>;
  readonly context: unknown;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** Where held requests wait across restarts (as Leshan keeps its queue apart from the server). */
export interface DeviceQueueStore {
  /** Every held request, per device in the order they were made. */
  all(): Promise<HeldRequest[]>;
  /** The device's held requests, in order (a cluster node the device registered with or moved to). */
  ofEndpoint(endpointId: string): Promise<HeldRequest[]>;
  /** Up to `limit` requests that expired before `before` (epoch ms), oldest first: the cluster's sweep of requests nobody holds. */
  expiredBefore(before: number, limit: number): Promise<HeldRequest[]>;
  add(held: HeldRequest): Promise<void>;
  remove(id: string): Promise<void>;
}
