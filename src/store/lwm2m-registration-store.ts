import type { Kysely, Selectable } from 'kysely';
import type { RegistrationStore } from '../lwm2m/registration-store.js';
import type { Registration, RegistrationParameters } from '../lwm2m/registration.js';
import { fromJson, toJson, type Schema } from './schema.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';

const COLUMNS = ['id', 'endpoint_id', 'account_id', 'service_id', 'peer_address', 'peer_port', 'parameters', 'registered_at', 'updated_at'] as const;
const CHANGED = COLUMNS.filter((column) => column !== 'endpoint_id');
/** The endpoint's row (at most one, by the unique endpoint_id) becomes the new registration: one statement. */
const ADD_SQL = `insert into lwm2m_registrations (${COLUMNS.join(', ')}) values (${COLUMNS.map(() => '?').join(', ')}) on conflict (endpoint_id) do update set ${CHANGED.map((c) => `${c} = excluded.${c}`).join(', ')}`;
const UPDATED = CHANGED.filter((column) => column !== 'id');
const UPDATE_SQL = `update lwm2m_registrations set ${UPDATED.map((c) => `${c} = ?`).join(', ')} where id = ?`;
const REMOVE_SQL = 'delete from lwm2m_registrations where id = ?';

/**
 * Registrations in the service's database (migration 0022), SQLite or PostgreSQL. On SQLite the writes go
 * through the hot path (one commit per turn with the turn's presence and events): a fleet re-registering
 * after an outage writes thousands a second.
 */
export class SqlRegistrationStore implements RegistrationStore {
  readonly #db: Kysely<Schema>;
  readonly #hot: SqliteHotPath | undefined;

  constructor(db: Kysely<Schema>, hot?: SqliteHotPath) {
    this.#db = db;
    this.#hot = hot;
  }

  async all(heardBy?: string): Promise<Registration[]> {
    if (heardBy === undefined) return (await this.#db.selectFrom('lwm2m_registrations').selectAll().execute()).map(fromRow);
    const rows = await this.#db
      .selectFrom('lwm2m_registrations as r')
      .innerJoin('endpoints as e', 'e.id', 'r.endpoint_id')
      .selectAll('r')
      .where('e.heard_node', '=', heardBy)
      .execute();
    return rows.map(fromRow);
  }

  async get(id: string): Promise<Registration | undefined> {
    const row = await this.#db.selectFrom('lwm2m_registrations').selectAll().where('id', '=', id).executeTakeFirst();
    return row && fromRow(row);
  }

  async atPeer(address: string, port: number): Promise<Registration | undefined> {
    const row = await this.#db.selectFrom('lwm2m_registrations').selectAll().where('peer_address', '=', address).where('peer_port', '=', port).orderBy('updated_at', 'desc').executeTakeFirst();
    return row && fromRow(row);
  }

  async add(registration: Registration): Promise<void> {
    const row = toRow(registration);
    const values = COLUMNS.map((column) => row[column]);
    if (this.#hot) {
      await this.#hot.execute(ADD_SQL, values);
      return;
    }
    const { endpoint_id: _endpoint, ...changes } = row;
    await this.#db.insertInto('lwm2m_registrations').values(row).onConflict((oc) => oc.column('endpoint_id').doUpdateSet(changes)).execute();
  }

  async update(registration: Registration): Promise<void> {
    const row = toRow(registration);
    if (this.#hot) {
      await this.#hot.execute(UPDATE_SQL, [...UPDATED.map((column) => row[column]), registration.id]);
      return;
    }
    const { id: _id, endpoint_id: _endpoint, ...changes } = row;
    await this.#db.updateTable('lwm2m_registrations').set(changes).where('id', '=', registration.id).execute();
  }

  async remove(id: string): Promise<void> {
    if (this.#hot) {
      await this.#hot.execute(REMOVE_SQL, [id]);
      return;
    }
    await this.#db.deleteFrom('lwm2m_registrations').where('id', '=', id).execute();
  }
}

function fromRow(row: Selectable<Schema['lwm2m_registrations']>): Registration {
  return {
    ...fromJson<RegistrationParameters>(row.parameters),
    id: row.id,
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    serviceId: row.service_id,
    peer: { address: row.peer_address, port: row.peer_port },
    registeredAt: new Date(Number(row.registered_at)).toISOString(),
    updatedAt: new Date(Number(row.updated_at)).toISOString(),
  };
}

function toRow(registration: Registration) {
  const parameters: RegistrationParameters = {
    endpointName: registration.endpointName,
    lifetime: registration.lifetime,
    lwm2mVersion: registration.lwm2mVersion,
    binding: registration.binding,
    sms: registration.sms,
    queueMode: registration.queueMode,
    objectLinks: registration.objectLinks,
    rootPath: registration.rootPath,
    contentFormats: registration.contentFormats,
  };
  const stored = registration.secure ? { ...parameters, secure: true, identity: registration.identity } : parameters;
  return {
    id: registration.id,
    endpoint_id: registration.endpointId,
    account_id: registration.accountId,
    service_id: registration.serviceId,
    peer_address: registration.peer.address,
    peer_port: registration.peer.port,
    parameters: toJson(stored),
    registered_at: Date.parse(registration.registeredAt),
    updated_at: Date.parse(registration.updatedAt),
  };
}
