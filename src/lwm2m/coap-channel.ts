import type { Scope } from '../domain/scope.js';

/** A request a script sends to a device with `coap.send`. */
export interface OutgoingCoapRequest {
  readonly method: string;
  readonly path: string;
  readonly payload: Buffer;
  readonly contentFormat?: number | undefined;
  readonly confirmable: boolean;
  readonly timeoutMs: number;
}

/** What scripts reach through `context.devices.coap` (the `coap` namespace). */
export interface CoapChannel {
  /**
   * Sends a CoAP request to the device (its LwM2M registration's address, else the address it was last heard
   * from over CoAP); resolves with its answer. Errors as `udp.send`'s.
   */
  send(scope: Scope, ref: string, request: OutgoingCoapRequest): Promise<{ code: string; payload: string; payloadBase64: string; text?: string }>;
  /** Sends a notification to every observer the device registered on `path` of this server; resolves with how many. */
  notify(scope: Scope, ref: string, path: string, payload: Buffer, contentFormat: number | undefined): Promise<{ notified: number }>;
}
