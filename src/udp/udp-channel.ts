import type { Scope } from '../domain/scope.js';

/** How long `udp.queue` holds a message by default and at most: the trigger queue ttl of SPEC "Limits". */
export const QUEUE_TTL_SECONDS = 604_800;

/** What scripts reach through `context.devices.udp` (the `udp` namespace). Tenancy: `scope` must own the endpoint. */
export interface UdpChannel {
  /**
   * Sends to the address the device's last datagram came from (recorded by the service, never the API's);
   * 409 `IOTB_DEVICE_ADDRESS_UNKNOWN` before it was heard from, `IOTB_DEVICE_ADDRESS_REFUSED` when no device
   * can be there, 429 `IOTB_DEVICE_SEND_RATE_LIMITED` over the send caps.
   */
  send(scope: Scope, ref: string, payload: Buffer): Promise<{ remoteAddr: string; bytes: number }>;
  /** Holds the message until the device's next datagram, then sends it right after; returns how many it holds. Counts against the send caps now. */
  queue(scope: Scope, ref: string, payload: Buffer, ttlSeconds: number): Promise<{ queued: number }>;
}
