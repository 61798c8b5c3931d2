import type { Scope } from '../domain/scope.js';

/** What scripts reach through `context.devices.tcp` (`tcp.send`). Tenancy: `scope` must own the endpoint. */
export interface TcpChannel {
  /** Writes one frame to the device's open connection, then emits `tcp-sent`; 409 `IOTB_DEVICE_NOT_CONNECTED` without one, 429 `IOTB_DEVICE_SEND_RATE_LIMITED` over the send caps. */
  send(scope: Scope, ref: string, payload: Buffer): Promise<{ bytes: number }>;
}
