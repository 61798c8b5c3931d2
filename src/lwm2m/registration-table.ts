import { formatPeer, type Peer } from '../coap/index.js';
import type { Registration } from './registration.js';

/**
 * The registrations this node holds, by id, by endpoint and by the address they were made from, with when each
 * device was last heard (for queue mode). One registration per endpoint and per address: a device that takes
 * over another's address displaces that registration (SPEC: remoteAddr unset when re-used).
 */
export class RegistrationTable {
  readonly #byId = new Map<string, Registration>();
  readonly #byEndpoint = new Map<string, string>();
  readonly #byPeer = new Map<string, string>();
  /** When each registration was last heard from (ms since the epoch). */
  readonly #heardAt = new Map<string, number>();

  get size(): number {
    return this.#byId.size;
  }

  get(id: string): Registration | undefined {
    return this.#byId.get(id);
  }

  /** The endpoint's registration, however old (the caller decides whether it is past its lifetime). */
  ofEndpoint(endpointId: string): Registration | undefined {
    const id = this.#byEndpoint.get(endpointId);
    return id === undefined ? undefined : this.#byId.get(id);
  }

  /** The registration made from `peer`'s address, if one is held. */
  at(peer: Peer): Registration | undefined {
    const id = this.#byPeer.get(formatPeer(peer));
    return id === undefined ? undefined : this.#byId.get(id);
  }

  all(): IterableIterator<Registration> {
    return this.#byId.values();
  }

  /**
   * Holds `registration` (replacing nothing: remove the endpoint's older one first). Returns the registration of
   * another endpoint that held the same address, now removed from the table, for the caller to end elsewhere.
   */
  add(registration: Registration): Registration | undefined {
    this.#byId.set(registration.id, registration);
    this.#byEndpoint.set(registration.endpointId, registration.id);
    const key = formatPeer(registration.peer);
    const other = this.#byPeer.get(key);
    const displaced = other === undefined ? undefined : this.#byId.get(other);
    this.#byPeer.set(key, registration.id);
    if (!displaced || displaced.endpointId === registration.endpointId) return undefined;
    this.remove(displaced);
    return displaced;
  }

  /** Holds a registration read back at start, as last heard at `heardAt`. */
  restore(registration: Registration, heardAt: number): void {
    this.#byId.set(registration.id, registration);
    this.#byEndpoint.set(registration.endpointId, registration.id);
    this.#byPeer.set(formatPeer(registration.peer), registration.id);
    this.#heardAt.set(registration.id, heardAt);
  }

  remove(registration: Registration): void {
    this.#heardAt.delete(registration.id);
    this.#byId.delete(registration.id);
    if (this.#byEndpoint.get(registration.endpointId) === registration.id) this.#byEndpoint.delete(registration.endpointId);
    const key = formatPeer(registration.peer);
    if (this.#byPeer.get(key) === registration.id) this.#byPeer.delete(key);
  }

  heard(registration: Registration, at = Date.now()): void {
    this.#heardAt.set(registration.id, at);
  }

  /** When the device was last heard from (ms since the epoch); 0 when never. */
  heardAt(registration: Registration): number {
    return this.#heardAt.get(registration.id) ?? 0;
  }
}
