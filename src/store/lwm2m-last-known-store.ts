import type { Kysely } from 'kysely';
import type { LastKnownStore } from '../lwm2m/last-known-store.js';
import type { JsonRecord } from '../lwm2m/json-values.js';
import { fromJson, toJson, type Schema } from './schema.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';

const PUT_SQL = 'insert into lwm2m_last_known (endpoint_id, path, record, updated_at) values (?, ?, ?, ?) on conflict (endpoint_id, path) do update set record = excluded.record, updated_at = excluded.updated_at';

/**
 * Last-known values in the service's database (migration 0023). On SQLite the writes join the turn's commit
 * (the hot path): every read of a device writes its values, and reads are the busiest LwM2M exchange.
 */
export class SqlLastKnownStore implements LastKnownStore {
  readonly #db: Kysely<Schema>;
  readonly #hot: SqliteHotPath | undefined;

  constructor(db: Kysely<Schema>, hot?: SqliteHotPath) {
    this.#db = db;
    this.#hot = hot;
  }

  async put(endpointId: string, records: readonly JsonRecord[]): Promise<void> {
    if (records.length === 0) return;
    const now = Date.now();
    if (this.#hot) {
      const hot = this.#hot;
      await Promise.all(records.map((record) => hot.execute(PUT_SQL, [endpointId, record.path, toJson(record), now])));
      return;
    }
    // The same path twice in one answer: the later value wins (one row may not be upserted twice in a statement).
    const latest = new Map(records.map((record) => [record.path, record]));
    const rows = [...latest.values()].map((record) => ({ endpoint_id: endpointId, path: record.path, record: toJson(record), updated_at: now }));
    await this.#db
      .insertInto('lwm2m_last_known')
      .values(rows)
      .onConflict((oc) => oc.columns(['endpoint_id', 'path']).doUpdateSet((eb) => ({ record: eb.ref('excluded.record'), updated_at: eb.ref('excluded.updated_at') })))
      .execute();
  }

  async list(endpointId: string): Promise<JsonRecord[]> {
    const rows = await this.#db.selectFrom('lwm2m_last_known').select('record').where('endpoint_id', '=', endpointId).execute();
    return rows.map((row) => fromJson<JsonRecord>(row.record));
  }
}
