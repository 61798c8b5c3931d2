import type { Kysely, Selectable } from 'kysely';
import type { ObservationStore, StoredObservation } from '../lwm2m/observation-store.js';
import { fromJson, toJson, type Schema } from './schema.js';

/** Observations in the service's database (migration 0024). Written when one starts or ends, not per notification. */
export class SqlObservationStore implements ObservationStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(): Promise<StoredObservation[]> {
    return (await this.#db.selectFrom('lwm2m_observations').selectAll().execute()).map(fromRow);
  }

  async ofRegistration(registrationId: string): Promise<StoredObservation[]> {
    return (await this.#db.selectFrom('lwm2m_observations').selectAll().where('registration_id', '=', registrationId).execute()).map(fromRow);
  }

  async get(token: string): Promise<StoredObservation | undefined> {
    const row = await this.#db.selectFrom('lwm2m_observations').selectAll().where('token', '=', token).executeTakeFirst();
    return row && fromRow(row);
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

  async removeOrphans(): Promise<number> {
    const result = await this.#db
      .deleteFrom('lwm2m_observations')
      .where((eb) => eb.not(eb.exists(eb.selectFrom('lwm2m_registrations as r').select('r.id').whereRef('r.id', '=', 'lwm2m_observations.registration_id'))))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function fromRow(row: Selectable<Schema['lwm2m_observations']>): StoredObservation {
  return {
    token: row.token,
    endpointId: row.endpoint_id,
    registrationId: row.registration_id,
    operation: row.operation === 'observeComposite' ? 'observeComposite' : 'observe',
    path: row.path,
    paths: row.paths === null ? undefined : fromJson<string[]>(row.paths),
    format: row.format,
    since: new Date(Number(row.since)).toISOString(),
  };
}
