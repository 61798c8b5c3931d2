import type { Observation } from '../coap/index.js';

/** One active LwM2M observation (Core 6.4.1) of a device's path. */
export interface ActiveObservation {
  readonly path: string;
  /** The CoAP token as hex: the `token` of the `lwm2m-data` events its notifications become. */
  readonly token: string;
  /** When the observation was accepted (ISO 8601). */
  readonly since: string;
  /** The registration it belongs to: observations end with it. */
  readonly registrationId: string;
  readonly observation: Observation;
}

/**
 * The active observations per endpoint and path, in memory. A new observation of a path replaces the old
 * one; a device's observations end with its registration ({@link ObservationTable.dropEndpoint}).
 */
export class ObservationTable {
  readonly #byEndpoint = new Map<string, Map<string, ActiveObservation>>();

  get(endpointId: string, path: string): ActiveObservation | undefined {
    return this.#byEndpoint.get(endpointId)?.get(path);
  }

  /** The endpoint's observations, by path. */
  list(endpointId: string): ActiveObservation[] {
    return [...(this.#byEndpoint.get(endpointId)?.values() ?? [])].sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  }

  /** Adds an observation; returns the one it replaces (the caller cancels it). */
  set(endpointId: string, entry: ActiveObservation): ActiveObservation | undefined {
    let paths = this.#byEndpoint.get(endpointId);
    if (!paths) {
      paths = new Map();
      this.#byEndpoint.set(endpointId, paths);
    }
    const previous = paths.get(entry.path);
    paths.set(entry.path, entry);
    return previous;
  }

  /** Forgets `entry` if it is still the one held for its path; returns whether it was. */
  delete(endpointId: string, entry: ActiveObservation): boolean {
    const paths = this.#byEndpoint.get(endpointId);
    if (paths?.get(entry.path) !== entry) return false;
    paths.delete(entry.path);
    if (paths.size === 0) this.#byEndpoint.delete(endpointId);
    return true;
  }

  /**
   * Ends every observation of the endpoint without a request to the device (its registration ended): the
   * CoAP layer forgets the tokens and answers later notifications with RST (RFC 7641 3.6).
   */
  dropEndpoint(endpointId: string): ActiveObservation[] {
    const dropped = this.list(endpointId);
    this.#byEndpoint.delete(endpointId);
    for (const entry of dropped) void entry.observation.cancel({ proactive: false });
    return dropped;
  }

  get size(): number {
    let size = 0;
    for (const paths of this.#byEndpoint.values()) size += paths.size;
    return size;
  }
}
