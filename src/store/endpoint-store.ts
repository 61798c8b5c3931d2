import { sql, type Kysely, type Selectable, type SelectQueryBuilder, type Transaction } from 'kysely';
import {
  mergePatch,
  parseTag,
  type Endpoint,
  type EndpointFilter,
  type EndpointSort,
  type EndpointStore,
  type EndpointState,
  type HeardFrom,
  type JsonObject,
  type PresenceChange,
} from '../domain/endpoints.js';
import type { PageRequest } from '../domain/pagination.js';
import { AppError } from '../errors.js';
import type { DialectName } from './database.js';
import { deviceLookup, keyLookup, type EndpointReadCache } from './endpoint-read-cache.js';
import { fromJson, toJson, type EndpointsTable, type Schema } from './schema.js';
import { isUniqueViolation, pageOf, precompiled, startsWith, toIso, toMs } from './sql.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';

const SORT_COLUMNS = { key: 'key', createdAt: 'created_at', updatedAt: 'updated_at' } as const;

type EndpointQuery = SelectQueryBuilder<Schema, 'endpoints', object>;

/**
 * Service types whose devices name themselves by key on a port every account shares: a key there belongs
 * to one account (docs/security.md "Endpoint keys"). LoRa devices come through their own service's webhook.
 */
const SHARED_PORT_TYPES = ['lwm2m', 'coap', 'mqtt', 'udp', 'tcp'];

/** Rows per multi-row insert: under both databases' limits on bound parameters (endpoints have 10 columns). */
const INSERT_ROWS = 500;

export class SqlEndpointStore implements EndpointStore {
  readonly #db: Kysely<Schema>;
  // The look-ups behind every `/endpoints/{id | k.key}` request, compiled once.
  readonly #byId;
  readonly #byKey;
  readonly #byServiceKey;
  // Read before every send to a device (udp.send, coap.send): compiled once.
  readonly #heardFrom;
  // Read at every device log-in (a reconnecting fleet: thousands a second): compiled once.
  readonly #devices;
  readonly #passwordHash;

  readonly #dialect: DialectName;
  /** The embedded database's batched writes, for presence (SQLite only). */
  readonly #hot: SqliteHotPath | undefined;
  /**
   * Rows as last read by id and key, where this process makes every write to them (not in a cluster): each write
   * below forgets what it touched once it has ended.
   */
  readonly #cache: EndpointReadCache | undefined;

  constructor(db: Kysely<Schema>, dialect: DialectName, options: { hot?: SqliteHotPath | undefined; cache?: EndpointReadCache | undefined } = {}) {
    this.#db = db;
    this.#dialect = dialect;
    this.#hot = options.hot;
    this.#cache = options.cache;
    const endpoints = db.selectFrom('endpoints').selectAll().where('account_id', '=', '');
    this.#byId = precompiled(db, endpoints.where('id', '=', ''));
    // No LIMIT: a bound LIMIT doubled the cost of these look-ups on SQLite (~30 against ~14 µs); a key has one
    // endpoint per service at most, so the rows are few and cut here.
    this.#byKey = precompiled(db, endpoints.where('key', '=', ''));
    this.#byServiceKey = precompiled(db, endpoints.where('key', '=', '').where('service_id', '=', ''));
    this.#heardFrom = precompiled(db, db.selectFrom('endpoints').select(['heard_protocol', 'heard_addr', 'heard_node']).where('id', '=', ''));
    // No ORDER BY or LIMIT: on SQLite they tripled the cost of this look-up (a temporary sort tree per call);
    // a key has one endpoint per service of the type at most, so the rows are few and sorted here.
    this.#devices = precompiled(
      db,
      db.selectFrom('endpoints').innerJoin('services', 'services.id', 'endpoints.service_id').selectAll('endpoints').where('endpoints.key', '=', '').where('services.type', '=', ''),
    );
    this.#passwordHash = precompiled(db, db.selectFrom('endpoint_credentials').select(['password_hash', 'updated_at']).where('endpoint_id', '=', ''));
  }

  async insert(endpoint: Endpoint): Promise<void> {
    await this.#write(async (trx) => {
      await this.#claimKey(trx, endpoint);
      await trx.insertInto('endpoints').values(toRow(endpoint)).execute();
      await writeTags(trx, endpoint);
    }, [endpoint.id]);
  }

  async insertMany(endpoints: readonly Endpoint[], passwordHashes?: ReadonlyMap<string, string>): Promise<void> {
    if (endpoints.length === 0) return;
    await this.#write(
      async (trx) => {
        for (const endpoint of endpoints) await this.#claimKey(trx, endpoint);
        for (let start = 0; start < endpoints.length; start += INSERT_ROWS) await trx.insertInto('endpoints').values(endpoints.slice(start, start + INSERT_ROWS).map(toRow)).execute();
        const tags = endpoints.flatMap((endpoint) => endpoint.tags.map((tag) => ({ endpoint_id: endpoint.id, account_id: endpoint.accountId, ...parseTag(tag) })));
        for (let start = 0; start < tags.length; start += INSERT_ROWS) await trx.insertInto('endpoint_tags').values(tags.slice(start, start + INSERT_ROWS)).execute();
        const updatedAt = Date.now();
        const credentials = [...(passwordHashes ?? [])].map(([endpointId, hash]) => ({ endpoint_id: endpointId, password_hash: hash, updated_at: updatedAt }));
        for (let start = 0; start < credentials.length; start += INSERT_ROWS) await trx.insertInto('endpoint_credentials').values(credentials.slice(start, start + INSERT_ROWS)).execute();
      },
      endpoints.map((endpoint) => endpoint.id),
    );
  }

  async byKeys(accountId: string, serviceId: string, keys: readonly string[]): Promise<Endpoint[]> {
    const rows = await this.#db.selectFrom('endpoints').selectAll().where('account_id', '=', accountId).where('service_id', '=', serviceId).where('key', 'in', [...keys]).execute();
    return rows.map(toEndpoint);
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

  async getById(accountId: string, id: string): Promise<Endpoint | undefined> {
    const held = this.#cache?.get(accountId, id);
    if (held) return held;
    const generation = this.#cache?.generation ?? 0;
    const [row] = await this.#byId([accountId, id]);
    if (!row) return undefined;
    const endpoint = toEndpoint(row);
    this.#cache?.keep(endpoint, generation);
    return endpoint;
  }

  async findByKey(accountId: string, key: string, serviceId: string | undefined, limit: number): Promise<Endpoint[]> {
    return this.#lookUp(keyLookup(accountId, key, serviceId, limit), async () => {
      const rows = serviceId === undefined ? await this.#byKey([accountId, key]) : await this.#byServiceKey([accountId, key, serviceId]);
      return rows.slice(0, limit).map(toEndpoint);
    });
  }

  /** A look-up by key: what the read cache holds for it, or `read` (kept for the next one unless a write ended meanwhile). */
  async #lookUp(lookup: string, read: () => Promise<Endpoint[]>): Promise<Endpoint[]> {
    const cache = this.#cache;
    if (!cache) return read();
    const held = cache.getByLookup(lookup);
    if (held) return held;
    const generation = cache.generation;
    const found = await read();
    cache.keepLookup(lookup, found, generation);
    return found;
  }

  async update(endpoint: Endpoint): Promise<void> {
    await this.#write(async (trx) => {
      await this.#claimKey(trx, endpoint);
      await updateOne(trx, endpoint);
    }, [endpoint.id]);
  }

  async delete(id: string): Promise<void> {
    try {
      await this.#db.deleteFrom('endpoints').where('id', '=', id).execute();
    } finally {
      this.#cache?.forgetWithKeys([id]);
    }
  }

  async list(accountId: string, filter: EndpointFilter, request: PageRequest, sort: EndpointSort) {
    const base = filtered(this.#db.selectFrom('endpoints'), accountId, filter);
    return pageOf(base, (q) => q.selectAll().orderBy(SORT_COLUMNS[sort]).orderBy('id'), request, toEndpoint);
  }

  async listAfter(accountId: string, after: { key: string; id: string } | undefined, limit: number): Promise<Endpoint[]> {
    let query = this.#db.selectFrom('endpoints').selectAll().where('account_id', '=', accountId);
    // `key >= ?` lets the (account_id, key) index start at the cursor; the `or` then skips what was read.
    if (after) query = query.where('key', '>=', after.key).where((eb) => eb.or([eb('key', '>', after.key), eb('id', '>', after.id)]));
    const rows = await query.orderBy('key').orderBy('id').limit(limit).execute();
    return rows.map(toEndpoint);
  }

  async count(accountId: string, filter: EndpointFilter): Promise<number> {
    const row = await filtered(this.#db.selectFrom('endpoints'), accountId, filter)
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async countTree(accountPath: string): Promise<number> {
    const row = await this.#db
      .selectFrom('endpoints')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('account_id', 'in', this.#db.selectFrom('accounts').select('id').where(startsWith('path', accountPath)))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async updateMany(accountId: string, filter: EndpointFilter, change: (endpoint: Endpoint) => Endpoint): Promise<number> {
    const touched: string[] = [];
    return this.#write(async (trx) => {
      const rows = await filtered(trx.selectFrom('endpoints'), accountId, filter).selectAll().execute();
      for (const row of rows) {
        const before = toEndpoint(row);
        const after = change(before);
        if (JSON.stringify(after.tags) === JSON.stringify(before.tags) && JSON.stringify(after.statusDetails) === JSON.stringify(before.statusDetails)) continue;
        touched.push(after.id);
        await updateOne(trx, after);
      }
      return touched.length;
    }, touched);
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

  async passwordHash(endpointId: string): Promise<{ hash: string; updatedAt: string } | undefined> {
    const [row] = await this.#passwordHash([endpointId]);
    return row && { hash: row.password_hash, updatedAt: toIso(row.updated_at) };
  }

  async passwordHashes(endpointIds: readonly string[]): Promise<Map<string, string>> {
    if (endpointIds.length === 0) return new Map();
    const rows = await this.#db.selectFrom('endpoint_credentials').select(['endpoint_id', 'password_hash']).where('endpoint_id', 'in', endpointIds).execute();
    return new Map(rows.map((row) => [row.endpoint_id, row.password_hash]));
  }

  async setPasswordHash(endpointId: string, hash: string, updatedAt: string): Promise<void> {
    const row = { endpoint_id: endpointId, password_hash: hash, updated_at: toMs(updatedAt) };
    await this.#db
      .insertInto('endpoint_credentials')
      .values(row)
      .onConflict((oc) => oc.column('endpoint_id').doUpdateSet({ password_hash: row.password_hash, updated_at: row.updated_at }))
      .execute();
  }

  async deletePasswordHash(endpointId: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('endpoint_credentials').where('endpoint_id', '=', endpointId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async findDevices(serviceType: string, key: string, limit: number): Promise<Endpoint[]> {
    return this.#lookUp(deviceLookup(serviceType, key, limit), async () => {
      const rows = await this.#devices([key, serviceType]);
      if (rows.length > 1) rows.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return rows.slice(0, limit).map(toEndpoint);
    });
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

  /**
   * Refuses (`IOTB_ENDPOINT_KEY_IN_USE`) a key that an endpoint of another account holds in a service of the
   * same shared-port protocol: the first account to use a key keeps it, so no later tenant can make a
   * device's log-in ambiguous. Checked inside the write's transaction; on PostgreSQL a transaction lock on
   * the key makes two accounts' concurrent claims take turns (SQLite runs one write transaction at a time).
   */
  async #claimKey(trx: Transaction<Schema>, endpoint: Endpoint): Promise<void> {
    if (this.#dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`endpoint-key:${endpoint.key}`}))`.execute(trx);
    const holder = await trx
      .selectFrom('endpoints')
      .innerJoin('services', 'services.id', 'endpoints.service_id')
      .select('endpoints.id')
      .where('endpoints.key', '=', endpoint.key)
      .where('endpoints.account_id', '<>', endpoint.accountId)
      .where('services.type', 'in', SHARED_PORT_TYPES)
      .where('services.type', '=', (eb) => eb.selectFrom('services').select('type').where('id', '=', endpoint.serviceId))
      .limit(1)
      .executeTakeFirst();
    if (holder) throw new AppError('IOTB_ENDPOINT_KEY_IN_USE');
  }

  /**
   * Runs a write in a transaction and turns a key collision into `IOTB_ENDPOINT_KEY_TAKEN`; then, committed or
   * not, the read cache forgets the endpoints it wrote (`ids` may be filled by the work) and every key look-up.
   */
  async #write<T>(work: (trx: Transaction<Schema>) => Promise<T>, ids: readonly string[]): Promise<T> {
    try {
      return await this.#db.transaction().execute(work);
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('IOTB_ENDPOINT_KEY_TAKEN');
      throw error;
    } finally {
      this.#cache?.forgetWithKeys(ids);
    }
  }
}

function filtered(query: EndpointQuery, accountId: string, filter: EndpointFilter): EndpointQuery {
  let q = query.where('account_id', '=', accountId);
  if (filter.serviceId !== undefined) q = q.where('service_id', '=', filter.serviceId);
  if (filter.keyPrefix !== undefined && filter.keyPrefix !== '') q = q.where(startsWith('key', filter.keyPrefix));
  if (filter.state !== undefined) q = q.where('state', '=', filter.state);
  for (const tag of filter.tags ?? []) {
    const { name, value } = parseTag(tag);
    q = q.where('id', 'in', (eb) =>
      eb
        .selectFrom('endpoint_tags')
        .select('endpoint_id')
        .where('account_id', '=', accountId)
        .where('name', '=', name)
        .$if(tag.includes(':'), (sub) => sub.where('value', '=', value)),
    );
  }
  // `->>` reads one key of a JSON object on both SQLite (3.38+) and PostgreSQL; JSON null counts as missing.
  for (const name of filter.hasStatusDetail ?? []) q = q.where(sql<boolean>`(status_details ->> cast(${name} as text)) is not null`);
  for (const name of filter.missingStatusDetail ?? []) q = q.where(sql<boolean>`(status_details ->> cast(${name} as text)) is null`);
  return q;
}

async function updateOne(trx: Transaction<Schema>, endpoint: Endpoint): Promise<void> {
  const { id: _id, account_id: _account, created_at: _created, ...changes } = toRow(endpoint);
  await trx.updateTable('endpoints').set(changes).where('id', '=', endpoint.id).execute();
  await trx.deleteFrom('endpoint_tags').where('endpoint_id', '=', endpoint.id).execute();
  await writeTags(trx, endpoint);
}

async function writeTags(trx: Transaction<Schema>, endpoint: Endpoint): Promise<void> {
  if (endpoint.tags.length === 0) return;
  const rows = endpoint.tags.map((tag) => ({ endpoint_id: endpoint.id, account_id: endpoint.accountId, ...parseTag(tag) }));
  await trx.insertInto('endpoint_tags').values(rows).execute();
}

function toRow(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    service_id: endpoint.serviceId,
    key: endpoint.key,
    tags: toJson(endpoint.tags),
    status_details: toJson(endpoint.statusDetails),
    parameters: toJson(endpoint.parameters),
    trace: endpoint.trace ? 1 : 0,
    created_at: toMs(endpoint.createdAt),
    updated_at: toMs(endpoint.updatedAt),
  };
}

function toEndpoint(row: Selectable<EndpointsTable>): Endpoint {
  return {
    id: row.id,
    key: row.key,
    serviceId: row.service_id,
    accountId: row.account_id,
    tags: fromJson<string[]>(row.tags),
    statusDetails: fromJson<JsonObject>(row.status_details),
    parameters: fromJson<JsonObject>(row.parameters),
    trace: row.trace === 1,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    state: row.state as EndpointState,
    lastSeenAt: row.last_seen_at === null ? null : toIso(row.last_seen_at),
  };
}
