import type { Logger } from 'pino';
import type { Endpoint } from '../domain/endpoints.js';
import { RegistrationTable } from './registration-table.js';
import type { Registration } from './registration.js';
import type { Lwm2mServerOptions } from './server.js';

/**
 * The registrations this node holds (the RegistrationTable) and what a change to one brings along: the store, the
 * presence of a device whose address another took over, and the server's listeners (registered, awake, ended).
 * The parts of the LwM2M server (server.ts) share it.
 */
export class LiveRegistrations {
  /** The registrations this node holds, and when each device was last heard from (queue mode). */
  readonly table = new RegistrationTable();
  readonly #options: Pick<Lwm2mServerOptions, 'registrations' | 'presence' | 'cluster' | 'awakeMs'>;
  readonly #logger: Logger;
  readonly #listeners: { registered: ((r: Registration) => void)[]; awake: ((r: Registration, heardAt: number) => void)[] } = { registered: [], awake: [] };
  readonly #registrationEnded: ((endpointId: string) => void)[] = [];

  constructor(options: Pick<Lwm2mServerOptions, 'registrations' | 'presence' | 'cluster' | 'awakeMs'>, logger: Logger) {
    this.#options = options;
    this.#logger = logger;
  }

  /** Registrations stored before the last stop (or crash): those still within their lifetime are live again. */
  async restore(): Promise<void> {
    const now = Date.now();
    // In a cluster, the devices this node heard last; the others are taken up where their next message arrives.
    for (const registration of await this.#options.registrations.all(this.#options.cluster?.node)) {
      if (now > Date.parse(registration.updatedAt) + registration.lifetime * 1000) {
        await this.#options.registrations.remove(registration.id);
        continue;
      }
      // Queue mode: awake as when it was last heard from.
      this.table.restore(registration, Date.parse(registration.updatedAt));
    }
    if (this.table.size > 0) this.#logger.info({ registrations: this.table.size }, 'LwM2M registrations restored');
  }

  /** The live registration of an endpoint, if it has one. */
  registrationOf(endpointId: string): Registration | undefined {
    const registration = this.table.ofEndpoint(endpointId);
    // Past its lifetime without an update the registration is over (Core 6.2.1); the presence sweep says so too.
    if (registration && Date.now() > Date.parse(registration.updatedAt) + registration.lifetime * 1000) return undefined;
    return registration;
  }

  /** See Lwm2mServer.onRegistered. */
  onRegistered(listener: (registration: Registration) => void): void {
    this.#listeners.registered.push(listener);
  }

  /** Tells the listeners of onRegistered. */
  registered(registration: Registration): void {
    for (const listener of this.#listeners.registered) listener(registration);
  }

  /** See Lwm2mServer.onAwake. */
  onAwake(listener: (registration: Registration, heardAt: number) => void): void {
    this.#listeners.awake.push(listener);
  }

  /** Whether a request sent now can reach the device: always unless it is in queue mode and asleep. */
  isAwake(registration: Registration): boolean {
    if (!registration.queueMode) return true;
    return Date.now() - (this.table.heardAt(registration)) < (this.#options.awakeMs ?? 93_000);
  }

  /** See Lwm2mServer.onRegistrationEnd. */
  onRegistrationEnd(listener: (endpointId: string) => void): void {
    this.#registrationEnded.push(listener);
  }

  /** Tells the listeners of onRegistrationEnd that the endpoint's registration ended. */
  ended(endpointId: string): void {
    for (const listener of this.#registrationEnded) {
      try {
        listener(endpointId);
      } catch (error) {
        this.#logger.error({ err: error, endpointId }, 'LwM2M registration-end listener failed');
      }
    }
  }

  /** Ends the account's registrations (suspended): each device's next Update gets 4.04 and its new Register is refused. */
  async closeAccount(accountId: string): Promise<number> {
    const ended = [...this.table.all()].filter((registration) => registration.accountId === accountId);
    for (const registration of ended) {
      this.forget(registration);
      await this.#options.registrations.remove(registration.id);
      this.ended(registration.endpointId);
      // `withSuspended`: the look-up by name otherwise hides a suspended account's devices.
      const [endpoint] = (await this.#options.presence.findDevices('lwm2m', registration.endpointName, { withSuspended: true })).filter((e) => e.id === registration.endpointId);
      if (endpoint) await this.#options.presence.disconnected(endpoint, 'lwm2m', 'account suspended');
    }
    return ended.length;
  }

  async endpointOf(registration: Registration): Promise<Endpoint | undefined> {
    const [endpoint] = (await this.#options.presence.findDevices('lwm2m', registration.endpointName)).filter((e) => e.id === registration.endpointId);
    return endpoint;
  }

  remember(registration: Registration): void {
    const displaced = this.table.add(registration);
    if (!displaced) return;
    // The address now belongs to this device: the registration that had it ends (SPEC: remoteAddr unset when re-used).
    void this.#options.registrations.remove(displaced.id).catch((error: unknown) => this.#logger.warn({ err: error, registrationId: displaced.id }, 'could not remove a displaced registration'));
    void this.endpointOf(displaced)
      .then((endpoint) => endpoint && this.#options.presence.addressReused(endpoint))
      .catch((error: unknown) => this.#logger.warn({ err: error, endpointId: displaced.endpointId }, 'could not unset a re-used remoteAddr'));
  }

  heard(registration: Registration): void {
    this.table.heard(registration);
  }

  /** `heardAt` (performance.now()) is when the device was heard: requests made after it wait for the next time. */
  wake(registration: Registration, heardAt: number): void {
    if (this.table.get(registration.id) !== registration) return; // replaced or gone meanwhile
    for (const listener of this.#listeners.awake) listener(registration, heardAt);
  }

  forget(registration: Registration): void {
    this.table.remove(registration);
  }
}
