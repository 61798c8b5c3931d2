import { sql, type Kysely } from 'kysely';
import { mergePatch, type Endpoint, type HeardFrom, type JsonObject, type PresenceChange } from '../domain/endpoints.js';
import type { DialectName } from './database.js';
import type { EndpointReadCache } from './endpoint-read-cache.js';
import { toEndpoint } from './endpoint-rows.js';
import { fromJson, toJson, type Schema } from './schema.js';
import { precompiled, toIso, toMs } from './sql.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';

/**
 * Whether devices are connected, when and where they were last heard from, and their status details: the
 * columns of `endpoints` every device message writes, behind SqlEndpointStore's presence methods. Shares that
 * store's read cache, so what changes here is patched or forgotten there too.
 */
export class EndpointPresenceStore {
  readonly #db: Kysely<Schema>;
  // Read before every send to a device (udp.send, coap.send): compiled once.
  readonly #heardFrom;
  readonly #dialect: DialectName;
  /** The embedded database's batched writes, for presence (SQLite only). */
  readonly #hot: SqliteHotPath | undefined;
  /** SqlEndpointStore's read cache (see there). */
  readonly #cache: EndpointReadCache | undefined;

  constructor(db: Kysely<Schema>, dialect: DialectName, hot: SqliteHotPath | undefined, cache: EndpointReadCache | undefined) {
    this.#db = db;
    this.#dialect = dialect;
    this.#hot = hot;
    this.#cache = cache;
    this.#heardFrom = precompiled(db, db.selectFrom('endpoints').select(['heard_protocol', 'heard_addr', 'heard_node']).where('id', '=', ''));
  }

  async setPresence(endpointId: string, change: PresenceChange): Promise<JsonObject | undefined> {
    let statusDetails: JsonObject | undefined;
    try {
      statusDetails = await this.#setPresence(endpointId, change);
    } catch (error) {
      this.#cache?.forget([endpointId]);
      throw error;
    }
    // What the statement changed of the row the API shows; status details and updatedAt only with `details`.
    this.#cache?.patch(endpointId, (held) => ({
      ...held,
      state: change.state,
      lastSeenAt: toIso(toMs(change.lastSeenAt)),
      ...(statusDetails && { statusDetails, updatedAt: toIso(toMs(change.lastSeenAt)) }),
    }));
    return statusDetails;
  }

  async #setPresence(endpointId: string, change: PresenceChange): Promise<JsonObject | undefined> {
    if (this.#hot) {
      const stored = await this.#hot.setPresence(endpointId, change);
      return stored === undefined ? undefined : fromJson<JsonObject>(stored);
    }
    const heard = change.heardFrom && { heard_protocol: change.heardFrom.protocol, heard_addr: change.heardFrom.remoteAddr, heard_node: change.heardFrom.node ?? null };
    const presence = { state: change.state, last_seen_at: toMs(change.lastSeenAt), missing_after: change.missingAfter === null ? null : toMs(change.missingAfter), ...heard };
    const details = change.details && Object.keys(change.details).length > 0 ? toJson(change.details) : undefined;
    if (details === undefined) {
      await this.#db.updateTable('endpoints').set(presence).where('id', '=', endpointId).execute();
      return undefined;
    }
    // Top-level, non-null values: jsonb || is the RFC 7396 merge then, as SQLite's json_patch always is.
    const merged = this.#dialect === 'postgres' ? sql<string>`status_details || ${details}::jsonb` : sql<string>`json_patch(status_details, ${details})`;
    const row = await this.#db
      .updateTable('endpoints')
      .set({ ...presence, status_details: merged, updated_at: toMs(change.lastSeenAt) })
      .where('id', '=', endpointId)
      .returning('status_details')
      .executeTakeFirst();
    return row && fromJson<JsonObject>(row.status_details);
  }

  async heardFrom(endpointId: string): Promise<HeardFrom | undefined> {
    const [row] = await this.#heardFrom([endpointId]);
    return row?.heard_protocol && row.heard_addr ? { protocol: row.heard_protocol, remoteAddr: row.heard_addr, ...(row.heard_node !== null && { node: row.heard_node }) } : undefined;
  }

  async forgetHeardFrom(endpointId: string): Promise<void> {
    await this.#db.updateTable('endpoints').set({ heard_protocol: null, heard_addr: null, heard_node: null }).where('id', '=', endpointId).execute();
  }

  async mergeStatusDetails(endpointId: string, details: JsonObject, updatedAt: string): Promise<JsonObject | undefined> {
    try {
      return await this.#db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('endpoints').select('status_details').where('id', '=', endpointId).executeTakeFirst();
        if (!row) return undefined;
        const merged = mergePatch(fromJson<JsonObject>(row.status_details), details);
        await trx.updateTable('endpoints').set({ status_details: toJson(merged), updated_at: toMs(updatedAt) }).where('id', '=', endpointId).execute();
        return merged;
      });
    } finally {
      this.#cache?.forget([endpointId]);
    }
  }

  async releaseHeardBy(node: string, protocols: readonly string[]): Promise<{ endpoint: Endpoint; protocol: string }[]> {
    if (protocols.length === 0) return [];
    try {
      const rows = await this.#db
        .updateTable('endpoints')
        .set({ state: 'unavailable', missing_after: null })
        .where('heard_node', '=', node)
        .where('state', '=', 'connected')
        .where('heard_protocol', 'in', [...protocols])
        .returningAll()
        .execute();
      return rows.map((row) => ({ endpoint: toEndpoint(row), protocol: row.heard_protocol! }));
    } finally {
      this.#cache?.forgetAll();
    }
  }

  async listMissing(now: string, limit: number): Promise<Endpoint[]> {
    const rows = await this.#db
      .selectFrom('endpoints')
      .selectAll()
      .where('state', '=', 'connected')
      .where('missing_after', '<', toMs(now))
      .orderBy('missing_after')
      .limit(limit)
      .execute();
    return rows.map(toEndpoint);
  }
}
