import type { Kysely } from 'kysely';
import type { BootstrapConfig } from '../lwm2m/bootstrap/config.js';
import type { BootstrapConfigStore, StoredBootstrapConfig } from '../lwm2m/bootstrap/configs.js';
import { fromJson, toJson, type Schema } from './schema.js';
import { toIso, toMs } from './sql.js';

/** Bootstrap configurations per endpoint (migration 0026). */
export class SqlBootstrapConfigStore implements BootstrapConfigStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async get(endpointId: string): Promise<StoredBootstrapConfig | undefined> {
    const row = await this.#db.selectFrom('lwm2m_bootstrap_configs').selectAll().where('endpoint_id', '=', endpointId).executeTakeFirst();
    return row && { endpointId: row.endpoint_id, config: fromJson<BootstrapConfig>(row.config), updatedAt: toIso(row.updated_at) };
  }

  async getMany(endpointIds: readonly string[]): Promise<Map<string, StoredBootstrapConfig>> {
    if (endpointIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('lwm2m_bootstrap_configs').selectAll().where('endpoint_id', 'in', endpointIds).execute();
    return new Map(rows.map((row) => [row.endpoint_id, { endpointId: row.endpoint_id, config: fromJson<BootstrapConfig>(row.config), updatedAt: toIso(row.updated_at) }]));
  }

  async put(accountId: string, endpointId: string, config: BootstrapConfig, now: string): Promise<StoredBootstrapConfig> {
    const row = { endpoint_id: endpointId, account_id: accountId, config: toJson(config), updated_at: toMs(now) };
    await this.#db
      .insertInto('lwm2m_bootstrap_configs')
      .values(row)
      .onConflict((oc) => oc.column('endpoint_id').doUpdateSet({ config: row.config, updated_at: row.updated_at }))
      .execute();
    return { endpointId, config, updatedAt: now };
  }

  async remove(endpointId: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('lwm2m_bootstrap_configs').where('endpoint_id', '=', endpointId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}
