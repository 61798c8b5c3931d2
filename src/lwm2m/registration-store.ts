import type { Registration } from './registration.js';

/**
 * Where live LwM2M registrations are kept, so that a restart (or, later, another process) knows them: the
 * server holds them in memory for every request and writes each change here before it answers the device.
 * As Leshan's RegistrationStore beside its server.
 */
export interface RegistrationStore {
  /** Every stored registration, for the server's start; with `heardBy`, those of the devices that node heard last (cluster mode). */
  all(heardBy?: string): Promise<Registration[]>;
  /** One registration, by its id (a cluster node taking over a device another node registered). */
  get(id: string): Promise<Registration | undefined>;
  /** The registration made from this address, if any (a cluster node taking over a device whose first message to it is a Send). */
  atPeer(address: string, port: number): Promise<Registration | undefined>;
  /** A new registration: replaces any other of the same endpoint. */
  add(registration: Registration): Promise<void>;
  /** An Update (lifetime, binding, address, object links, time): one statement. */
  update(registration: Registration): Promise<void>;
  /** De-registered, expired, replaced or its endpoint gone. */
  remove(id: string): Promise<void>;
}
