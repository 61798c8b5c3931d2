import type { Kysely, Selectable } from 'kysely';
import type { EndpointPosition, Geofence, GeofenceStore, PositionStore } from '../location/model.js';
import { fromJson, toJson, type EndpointPositionsTable, type GeofencesTable, type Schema } from './schema.js';
import { toIso, toMs } from './sql.js';

/** Geofences and which of them each endpoint is inside (migration 0032). */
export class SqlGeofenceStore implements GeofenceStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(accountId: string): Promise<Geofence[]> {
    const rows = await this.#db.selectFrom('geofences').selectAll().where('account_id', '=', accountId).orderBy('name').orderBy('id').execute();
    return rows.map(toGeofence);
  }

  async get(accountId: string, id: string): Promise<Geofence | undefined> {
    const row = await this.#db.selectFrom('geofences').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toGeofence(row);
  }

  async insert(geofence: Geofence): Promise<void> {
    await this.#db.insertInto('geofences').values(toRow(geofence)).execute();
  }

  async update(geofence: Geofence): Promise<void> {
    const { id, account_id: accountId, created_at: _created, ...changes } = toRow(geofence);
    await this.#db.updateTable('geofences').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const found = await trx.selectFrom('geofences').select('id').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      if (!found) return false;
      await trx.deleteFrom('geofence_presence').where('geofence_id', '=', id).execute();
      await trx.deleteFrom('geofences').where('id', '=', id).execute();
      return true;
    });
  }

  async presence(endpointId: string): Promise<Map<string, number>> {
    const rows = await this.#db.selectFrom('geofence_presence').select(['geofence_id', 'entered_at']).where('endpoint_id', '=', endpointId).execute();
    return new Map(rows.map((row) => [row.geofence_id, Number(row.entered_at)]));
  }

  async changePresence(endpointId: string, entered: readonly string[], left: readonly string[], at: number): Promise<void> {
    if (entered.length === 0 && left.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      if (left.length > 0) await trx.deleteFrom('geofence_presence').where('endpoint_id', '=', endpointId).where('geofence_id', 'in', [...left]).execute();
      if (entered.length > 0) {
        await trx
          .insertInto('geofence_presence')
          .values(entered.map((geofenceId) => ({ endpoint_id: endpointId, geofence_id: geofenceId, entered_at: at })))
          .onConflict((oc) => oc.columns(['endpoint_id', 'geofence_id']).doNothing())
          .execute();
      }
    });
  }
}

/** Endpoints' last known positions (migration 0032). */
export class SqlPositionStore implements PositionStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async put(position: EndpointPosition): Promise<void> {
    const row = {
      endpoint_id: position.endpointId,
      account_id: position.accountId,
      lat: position.lat,
      lon: position.lon,
      accuracy: position.accuracy,
      source: position.source,
      at: toMs(position.at),
    };
    await this.#db
      .insertInto('endpoint_positions')
      .values(row)
      .onConflict((oc) => oc.column('endpoint_id').doUpdateSet({ lat: row.lat, lon: row.lon, accuracy: row.accuracy, source: row.source, at: row.at }))
      .execute();
  }

  async get(accountId: string, endpointId: string): Promise<EndpointPosition | undefined> {
    const row = await this.#db.selectFrom('endpoint_positions').selectAll().where('account_id', '=', accountId).where('endpoint_id', '=', endpointId).executeTakeFirst();
    return row && toPosition(row);
  }

  async list(accountId: string, options: { bbox?: readonly [number, number, number, number] | undefined; limit: number }): Promise<EndpointPosition[]> {
    let query = this.#db.selectFrom('endpoint_positions').selectAll().where('account_id', '=', accountId);
    if (options.bbox) {
      const [minLon, minLat, maxLon, maxLat] = options.bbox;
      query = query.where('lat', '>=', minLat).where('lat', '<=', maxLat);
      // A box across the antimeridian (minLon > maxLon) is the two sides of it.
      query = minLon <= maxLon ? query.where('lon', '>=', minLon).where('lon', '<=', maxLon) : query.where((eb) => eb.or([eb('lon', '>=', minLon), eb('lon', '<=', maxLon)]));
    }
    const rows = await query.orderBy('at', 'desc').limit(options.limit).execute();
    return rows.map(toPosition);
  }
}

function toRow(geofence: Geofence): GeofencesTable {
  return {
    id: geofence.id,
    account_id: geofence.accountId,
    name: geofence.name,
    description: geofence.description,
    tags: toJson(geofence.tags),
    shape: toJson(geofence.circle ? { circle: geofence.circle } : { geometry: geofence.geometry }),
    created_at: toMs(geofence.createdAt),
    updated_at: toMs(geofence.updatedAt),
  };
}

function toGeofence(row: Selectable<GeofencesTable>): Geofence {
  const shape = fromJson<Pick<Geofence, 'geometry' | 'circle'>>(row.shape);
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    description: row.description,
    tags: fromJson<string[]>(row.tags),
    ...(shape.circle ? { circle: shape.circle } : { geometry: shape.geometry }),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function toPosition(row: Selectable<EndpointPositionsTable>): EndpointPosition {
  return {
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    lat: Number(row.lat),
    lon: Number(row.lon),
    accuracy: row.accuracy === null ? null : Number(row.accuracy),
    source: row.source,
    at: toIso(row.at),
  };
}
