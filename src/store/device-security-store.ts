import type { Kysely } from 'kysely';
import type { DeviceSecurityStore, SecurityMode, StoredSecurity } from '../domain/device-security.js';
import type { Schema } from './schema.js';
import { toIso, toMs } from './sql.js';

/** Endpoints' DTLS security (migration 0027). */
export class SqlDeviceSecurityStore implements DeviceSecurityStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async get(endpointId: string): Promise<StoredSecurity | undefined> {
    const row = await this.#db.selectFrom('endpoint_security').selectAll().where('endpoint_id', '=', endpointId).executeTakeFirst();
    return row && toStored(row);
  }

  async getMany(endpointIds: readonly string[]): Promise<Map<string, StoredSecurity>> {
    if (endpointIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('endpoint_security').selectAll().where('endpoint_id', 'in', endpointIds).execute();
    return new Map(rows.map((row) => [row.endpoint_id, toStored(row)]));
  }

  async byPskIdentity(identity: string): Promise<StoredSecurity | undefined> {
    const row = await this.#db.selectFrom('endpoint_security').selectAll().where('psk_identity', '=', identity).executeTakeFirst();
    return row && toStored(row);
  }

  async put(security: StoredSecurity): Promise<boolean> {
    const row = {
      endpoint_id: security.endpointId,
      account_id: security.accountId,
      mode: security.mode,
      psk_identity: security.pskIdentity ?? null,
      psk_key: security.pskKey ?? null,
      updated_at: toMs(security.updatedAt),
    };
    if (security.pskIdentity !== undefined) {
      const owner = await this.byPskIdentity(security.pskIdentity);
      if (owner && owner.endpointId !== security.endpointId) return false;
    }
    try {
      await this.#db
        .insertInto('endpoint_security')
        .values(row)
        .onConflict((oc) => oc.column('endpoint_id').doUpdateSet({ mode: row.mode, psk_identity: row.psk_identity, psk_key: row.psk_key, updated_at: row.updated_at }))
        .execute();
      return true;
    } catch (error) {
      // Another endpoint took the identity meanwhile (the unique index).
      if (/unique|duplicate/i.test(String(error))) return false;
      throw error;
    }
  }

  async remove(endpointId: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('endpoint_security').where('endpoint_id', '=', endpointId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function toStored(row: { endpoint_id: string; account_id: string; mode: string; psk_identity: string | null; psk_key: string | null; updated_at: number | string }): StoredSecurity {
  return {
    endpointId: row.endpoint_id,
    accountId: row.account_id,
    mode: row.mode as SecurityMode,
    ...(row.psk_identity !== null && { pskIdentity: row.psk_identity }),
    ...(row.psk_key !== null && { pskKey: row.psk_key }),
    updatedAt: toIso(row.updated_at),
  };
}
