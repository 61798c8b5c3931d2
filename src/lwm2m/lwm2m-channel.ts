import type { Endpoint } from '../domain/endpoints.js';
import type { HeldSummary, HoldOptions } from './held-requests.js';
import type { JsonRecord } from './json-values.js';
import type { OperationRequest, OperationResult } from './operations.js';
import type { Registration } from './registration.js';

/**
 * What the API (`/endpoints/{ref}/lwm2m/…`) and scripts (`lwm2m.*`) reach through `context.devices.lwm2m`:
 * device management of the LwM2M devices registered here (DeviceManagement, device-management.ts). In a cluster the
 * call may run on the node that holds the registration (src/devices/device-routing.ts), so the look-ups that are
 * immediate in one process may also resolve later: callers await them.
 */
/** An active observation as the API lists it. */
export interface ObservationSummary {
  readonly path: string;
  readonly paths?: string[];
  readonly token: string;
  readonly since: string;
}

export interface Lwm2mChannel {
  /** Sends the request now, or once the device can be reached (it waits in the device queue). */
  perform(endpoint: Endpoint, request: OperationRequest, hooks?: { onQueued?: () => void; signal?: AbortSignal }): Promise<OperationResult>;
  /** An asynchronous request: stored, sent when the device can take it, its outcome an `lwm2m-result` event. */
  hold(endpoint: Endpoint, request: OperationRequest, options: HoldOptions): Promise<{ id: string; queued: boolean }>;
  /** The requests held for the device, in order. */
  heldRequests(endpoint: Endpoint): HeldSummary[] | Promise<HeldSummary[]>;
  /** Withdraws a held request before it is sent; false when none waits with that id. */
  cancelHeld(endpoint: Endpoint, id: string): Promise<boolean>;
  /** How many requests wait for the device. */
  queued(endpoint: Endpoint): number | Promise<number>;
  registrationOf(endpoint: Endpoint): Registration | undefined | Promise<Registration | undefined>;
  /** The name of an object as the endpoint's account knows it. */
  objectName(endpoint: Endpoint, objectId: number): string | undefined;
  /** The last value read or notified of each of the endpoint's resources, by path. */
  lastKnown(endpoint: Endpoint): Promise<JsonRecord[]>;
  /** The endpoint's active observations (path, token, since). */
  observations(endpoint: Endpoint): ObservationSummary[] | Promise<ObservationSummary[]>;
}
