import type { JsonRecord } from './json-values.js';

/** The last-known value of every resource of a device: written at each read and notification. */
export interface LastKnownStore {
  /** Replaces the stored values at these paths. */
  put(endpointId: string, records: readonly JsonRecord[]): Promise<void>;
  /** Every stored value of the endpoint, in no particular order. */
  list(endpointId: string): Promise<JsonRecord[]>;
}
