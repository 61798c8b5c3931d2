import type { Observation } from '../coap/index.js';

/** One active LwM2M observation (Core 6.4.1) of a device's path, or of several paths (Observe-Composite, 6.4.4). */
export interface ActiveObservation {
  /** The observed path; `/` for a composite observation. */
  readonly path: string;
  /** Observe-Composite: the watched paths. */
  readonly paths?: readonly string[] | undefined;
  /** The CoAP token as hex: the `token` of the `lwm2m-data` events its notifications become. */
  readonly token: string;
  /** When the observation was accepted (ISO 8601). */
  readonly since: string;
  /** The registration it belongs to: observations end with it. */
  readonly registrationId: string;
  readonly observation: Observation;
}

/**
 * What makes two observations the same, so that the newer replaces the older: the path, or for a composite
 * observation the set of paths (order and repeats aside). A device keeps one observation per key.
 */
export function observationKey(path: string, paths?: readonly string[]): string {
  return paths === undefined ? path : `composite:${[...new Set(paths)].sort().join(',')}`;
}

/**
 * The active observations per endpoint, in memory, by {@link observationKey}. A new observation of the same
 * key replaces the old one; a device's observations end with its registration ({@link ObservationTable.dropEndpoint}).
 */
export class ObservationTable {
  readonly #byEndpoint = new Map<string, Map<string, ActiveObservation>>();

  get(endpointId: string, key: string): ActiveObservation | undefined {
    return this.#byEndpoint.get(endpointId)?.get(key);
  }

  byToken(endpointId: string, token: string): ActiveObservation | undefined {
    return this.list(endpointId).find((entry) => entry.token === token);
  }

  /** The endpoint's observations, by path (composite ones, at `/`, first), then by their paths. */
  list(endpointId: string): ActiveObservation[] {
    const compare = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });
    return [...(this.#byEndpoint.get(endpointId)?.values() ?? [])].sort((a, b) => compare(a.path, b.path) || compare(observationKey(a.path, a.paths), observationKey(b.path, b.paths)));
  }

  /** Adds an observation; returns the one it replaces (the caller cancels it). */
  set(endpointId: string, entry: ActiveObservation): ActiveObservation | undefined {
    let entries = this.#byEndpoint.get(endpointId);
    if (!entries) {
      entries = new Map();
      this.#byEndpoint.set(endpointId, entries);
    }
    const key = observationKey(entry.path, entry.paths);
    const previous = entries.get(key);
    entries.set(key, entry);
    return previous;
  }

  /** Forgets `entry` if it is still the one held for its key; returns whether it was. */
  delete(endpointId: string, entry: ActiveObservation): boolean {
    const entries = this.#byEndpoint.get(endpointId);
    const key = observationKey(entry.path, entry.paths);
    if (entries?.get(key) !== entry) return false;
    entries.delete(key);
    if (entries.size === 0) this.#byEndpoint.delete(endpointId);
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
    for (const entries of this.#byEndpoint.values()) size += entries.size;
    return size;
  }
}
