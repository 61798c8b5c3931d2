/** An observation as stored: enough to take it up again after a restart. */
export interface StoredObservation {
  /** The CoAP token, hex. */
  readonly token: string;
  readonly endpointId: string;
  readonly registrationId: string;
  readonly operation: 'observe' | 'observeComposite';
  /** The observed path (`/` for a composite observation). */
  readonly path: string;
  /** Observe-Composite: the watched paths. */
  readonly paths?: readonly string[] | undefined;
  /** The Content-Format it was made in. */
  readonly format: number;
  /** ISO 8601. */
  readonly since: string;
}

/** Where active observations are kept across restarts (as Leshan's ObservationStore). */
export interface ObservationStore {
  all(): Promise<StoredObservation[]>;
  /** The observations of one registration (a cluster node taking over a device another node registered). */
  ofRegistration(registrationId: string): Promise<StoredObservation[]>;
  /** One observation by its token (a cluster node that hears a notification for an observation another node made). */
  get(token: string): Promise<StoredObservation | undefined>;
  add(observation: StoredObservation): Promise<void>;
  remove(token: string): Promise<void>;
  /** The device's registration ended: its observations with it. */
  removeEndpoint(endpointId: string): Promise<void>;
  /** Removes the observations whose registration is gone (replaced by a Register on another node, or ended); how many. */
  removeOrphans(): Promise<number>;
}
