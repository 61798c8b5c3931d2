import type { Kysely } from 'kysely';
import { fromJson, toJson, type Schema } from './schema.js';
import { toIso, toMs } from './sql.js';

/**
 * The named JSON values kept per endpoint (`endpoint_storage`: the API's and scripts' endpoint storage), behind
 * SqlEndpointStore's `storage*` methods. Not endpoint rows: nothing here concerns the endpoint read cache.
 */
export class EndpointStorageStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async storageOf(accountId: string, endpointIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    if (endpointIds.length === 0) return found;
    const rows = await this.#db
      .selectFrom('endpoint_storage')
      .innerJoin('endpoints', 'endpoints.id', 'endpoint_storage.endpoint_id')
      .select(['endpoint_storage.endpoint_id', 'endpoint_storage.name', 'endpoint_storage.value'])
      .where('endpoints.account_id', '=', accountId)
      .where('endpoint_storage.endpoint_id', 'in', [...endpointIds])
      .orderBy('endpoint_storage.endpoint_id')
      .orderBy('endpoint_storage.name')
      .execute();
    for (const row of rows) {
      const stored = found.get(row.endpoint_id) ?? {};
      stored[row.name] = fromJson<unknown>(row.value);
      found.set(row.endpoint_id, stored);
    }
    return found;
  }

  async storageGet(endpointId: string, name: string) {
    const row = await this.#db
      .selectFrom('endpoint_storage')
      .select(['value', 'updated_at'])
      .where('endpoint_id', '=', endpointId)
      .where('name', '=', name)
      .executeTakeFirst();
    return row && { value: fromJson<unknown>(row.value), updatedAt: toIso(row.updated_at) };
  }

  async storagePut(endpointId: string, name: string, value: unknown, updatedAt: string): Promise<void> {
    const row = { endpoint_id: endpointId, name, value: toJson(value), updated_at: toMs(updatedAt) };
    await this.#db
      .insertInto('endpoint_storage')
      .values(row)
      .onConflict((oc) => oc.columns(['endpoint_id', 'name']).doUpdateSet({ value: row.value, updated_at: row.updated_at }))
      .execute();
  }

  async storageDelete(endpointId: string, name: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('endpoint_storage').where('endpoint_id', '=', endpointId).where('name', '=', name).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async storageList(endpointId: string) {
    const rows = await this.#db
      .selectFrom('endpoint_storage')
      .select(['name', 'updated_at'])
      .where('endpoint_id', '=', endpointId)
      .orderBy('name')
      .execute();
    return rows.map((row) => ({ name: row.name, updatedAt: toIso(row.updated_at) }));
  }
}
