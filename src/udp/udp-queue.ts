/**
 * Messages `udp.queue` holds for devices behind NAT until they next send (they listen only right after
 * sending). Durable: the queue survives a restart.
 */
export interface UdpQueueStore {
  /** Adds a message unless the device already holds `limit` unexpired ones; returns how many it holds now, or undefined when full. */
  put(endpointId: string, payload: Buffer, expiresAt: number, limit: number, now: number): Promise<number | undefined>;
  /** Removes the device's messages and returns the unexpired ones, oldest first. */
  takeAll(endpointId: string, now: number): Promise<Buffer[]>;
  /** Drops expired messages of every device; returns how many. */
  purgeExpired(now: number): Promise<number>;
}
