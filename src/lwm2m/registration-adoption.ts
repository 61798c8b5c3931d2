import type { Logger } from 'pino';
import { formatPeer, type Peer } from '../coap/index.js';
import type { LiveRegistrations } from './live-registrations.js';
import type { Registration } from './registration.js';
import type { Lwm2mServerOptions } from './server.js';

/**
 * Registrations changing node in a cluster (docs/cluster.md): one another node made is taken up from the store when
 * its device's message reaches this node, and one another node registered or took up is let go here.
 */
export class RegistrationAdoption {
  readonly #options: Pick<Lwm2mServerOptions, 'registrations' | 'presence' | 'cluster'>;
  readonly #logger: Logger;
  readonly #live: LiveRegistrations;
  readonly #adopted: ((registration: Registration) => void)[] = [];
  readonly #released: ((endpointId: string) => void)[] = [];

  constructor(options: Pick<Lwm2mServerOptions, 'registrations' | 'presence' | 'cluster'>, logger: Logger, live: LiveRegistrations) {
    this.#options = options;
    this.#logger = logger;
    this.#live = live;
  }

  /**
   * The registration `id` for a message from `peer`, taken up from the store when another node made it (a
   * notification that reaches this node first); undefined when it is not live or was made from another address.
   */
  async takeUpFor(id: string, peer: Peer): Promise<Registration | undefined> {
    const held = this.#live.table.get(id);
    const found = held ?? (await this.#options.registrations.get(id));
    if (!found || found.peer.address !== peer.address || found.peer.port !== peer.port) return undefined;
    if (held) return held;
    const registration = this.#takeUp(found);
    const endpoint = registration && (await this.#live.endpointOf(registration));
    if (endpoint) await this.#options.presence.heard(endpoint, { protocol: 'lwm2m', remoteAddr: formatPeer(peer), lifetimeSeconds: registration.lifetime });
    return registration;
  }

  /** See Lwm2mServer.onAdopted. */
  onAdopted(listener: (registration: Registration) => void): void {
    this.#adopted.push(listener);
  }

  /**
   * A message names a registration this node does not hold: in a cluster, one another node made, whose device
   * now reaches this node (the load balancer moved it, or that node died). It is taken up from the store when
   * it is still live, so the device goes on without registering again (docs/cluster.md).
   */
  async adopt(id: string): Promise<Registration | undefined> {
    if (id === '' || id.length > 64) return undefined;
    return this.#takeUp(await this.#options.registrations.get(id));
  }

  /** The same at a Send, whose registration is known by the address it comes from. */
  async adoptAt(peer: Peer): Promise<Registration | undefined> {
    return this.#takeUp(await this.#options.registrations.atPeer(peer.address, peer.port));
  }

  #takeUp(stored: Registration | undefined): Registration | undefined {
    if (!stored || Date.now() > Date.parse(stored.updatedAt) + stored.lifetime * 1000) return undefined;
    const id = stored.id;
    const held = this.#live.table.get(id);
    if (held) return held; // taken up meanwhile by another message of the device
    const replaced = this.#live.table.ofEndpoint(stored.endpointId);
    if (replaced) this.#live.forget(replaced);
    this.#live.remember(stored);
    this.#live.heard(stored);
    this.#logger.info({ registrationId: id, endpointId: stored.endpointId }, 'LwM2M registration taken up from the store (another node made it)');
    this.#options.cluster?.notices.publish('lwm2m-registrations', stored.endpointId);
    for (const listener of this.#adopted) listener(stored);
    return stored;
  }

  /** See Lwm2mServer.onReleased. */
  onReleased(listener: (endpointId: string) => void): void {
    this.#released.push(listener);
  }

  /** Another node registered or took up the device: what this node held for it is let go (memory only; the store stays). */
  release(endpointId: string): void {
    const registration = this.#live.table.ofEndpoint(endpointId);
    if (registration) {
      this.#live.forget(registration);
      this.#logger.info({ registrationId: registration.id, endpointId }, 'LwM2M registration now held by another node');
    }
    for (const listener of this.#released) {
      try {
        listener(endpointId);
      } catch (error) {
        this.#logger.error({ err: error, endpointId }, 'LwM2M release listener failed');
      }
    }
  }
}
