import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.js';
import { fromJson, toJson } from '../store/schema.js';

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
  add(observation: StoredObservation): Promise<void>;
  remove(token: string): Promise<void>;
  /** The device's registration ended: its observations with it. */
  removeEndpoint(endpointId: string): Promise<void>;
}

/** Observations in the service's database (migration 0024). Written when one starts or ends, not per notification. */
export class SqlObservationStore implements ObservationStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(): Promise<StoredObservation[]> {
    const rows = await this.#db.selectFrom('lwm2m_observations').selectAll().execute();
    return rows.map((row) => ({
      token: row.token,
      endpointId: row.endpoint_id,
      registrationId: row.registration_id,
      operation: row.operation === 'observeComposite' ? 'observeComposite' : 'observe',
      path: row.path,
      paths: row.paths === null ? undefined : fromJson<string[]>(row.paths),
      format: row.format,
      since: new Date(Number(row.since)).toISOString(),
    }));
  }

  async add(observation: StoredObservation): Promise<void> {
    const row = {
      token: observation.token,
      endpoint_id: observation.endpointId,
      registration_id: observation.registrationId,
      operation: observation.operation,
      path: observation.path,
      paths: observation.paths === undefined ? null : toJson(observation.paths),
      format: observation.format,
      since: Date.parse(observation.since),
    };
    const { token: _token, ...changes } = row;
    await this.#db.insertInto('lwm2m_observations').values(row).onConflict((oc) => oc.column('token').doUpdateSet(changes)).execute();
  }

  async remove(token: string): Promise<void> {
    await this.#db.deleteFrom('lwm2m_observations').where('token', '=', token).execute();
  }

  async removeEndpoint(endpointId: string): Promise<void> {
    await this.#db.deleteFrom('lwm2m_observations').where('endpoint_id', '=', endpointId).execute();
  }
}
