import { sql, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import {
  parseTag,
  type Endpoint,
  type EndpointFilter,
  type EndpointSort,
  type EndpointStore,
  type HeardFrom,
  type JsonObject,
  type PresenceChange,
} from '../domain/endpoints.js';
import type { PageRequest } from '../domain/pagination.js';
import { AppError } from '../errors.js';
import type { DialectName } from './database.js';
import { EndpointPresenceStore } from './endpoint-presence-store.js';
import { deviceLookup, keyLookup, type EndpointReadCache } from './endpoint-read-cache.js';
import { toEndpoint, toRow } from './endpoint-rows.js';
import { EndpointStorageStore } from './endpoint-storage-store.js';
import type { Schema } from './schema.js';
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
  // Read at every device log-in (a reconnecting fleet: thousands a second): compiled once.
  readonly #devices;
  readonly #passwordHash;

  readonly #dialect: DialectName;
  /**
   * Rows as last read by id and key, where this process makes every write to them (not in a cluster): each write
   * below (and in EndpointPresenceStore, which shares it) forgets what it touched once it has ended.
   */
  readonly #cache: EndpointReadCache | undefined;
  /** Presence (written by every device message) and endpoint storage: concepts of their own, delegated to. */
  readonly #presence: EndpointPresenceStore;
  readonly #storage: EndpointStorageStore;

  constructor(db: Kysely<Schema>, dialect: DialectName, options: { hot?: SqliteHotPath | undefined; cache?: EndpointReadCache | undefined } = {}) {
    this.#db = db;
    this.#dialect = dialect;
    this.#cache = options.cache;
    this.#presence = new EndpointPresenceStore(db, dialect, options.hot, options.cache);
    this.#storage = new EndpointStorageStore(db);
    const endpoints = db.selectFrom('endpoints').selectAll().where('account_id', '=', '');
    this.#byId = precompiled(db, endpoints.where('id', '=', ''));
    // No LIMIT: a bound LIMIT doubled the cost of these look-ups on SQLite (~30 against ~14 µs); a key has one
    // endpoint per service at most, so the rows are few and cut here.
    this.#byKey = precompiled(db, endpoints.where('key', '=', ''));
    this.#byServiceKey = precompiled(db, endpoints.where('key', '=', '').where('service_id', '=', ''));
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

  storageOf(accountId: string, endpointIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    return this.#storage.storageOf(accountId, endpointIds);
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

  storageGet(endpointId: string, name: string): Promise<{ value: unknown; updatedAt: string } | undefined> {
    return this.#storage.storageGet(endpointId, name);
  }

  storagePut(endpointId: string, name: string, value: unknown, updatedAt: string): Promise<void> {
    return this.#storage.storagePut(endpointId, name, value, updatedAt);
  }

  storageDelete(endpointId: string, name: string): Promise<boolean> {
    return this.#storage.storageDelete(endpointId, name);
  }

  storageList(endpointId: string): Promise<{ name: string; updatedAt: string }[]> {
    return this.#storage.storageList(endpointId);
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

  setPresence(endpointId: string, change: PresenceChange): Promise<JsonObject | undefined> {
    return this.#presence.setPresence(endpointId, change);
  }

  heardFrom(endpointId: string): Promise<HeardFrom | undefined> {
    return this.#presence.heardFrom(endpointId);
  }

  forgetHeardFrom(endpointId: string): Promise<void> {
    return this.#presence.forgetHeardFrom(endpointId);
  }

  mergeStatusDetails(endpointId: string, details: JsonObject, updatedAt: string): Promise<JsonObject | undefined> {
    return this.#presence.mergeStatusDetails(endpointId, details, updatedAt);
  }

  releaseHeardBy(node: string, protocols: readonly string[]): Promise<{ endpoint: Endpoint; protocol: string }[]> {
    return this.#presence.releaseHeardBy(node, protocols);
  }

  listMissing(now: string, limit: number): Promise<Endpoint[]> {
    return this.#presence.listMissing(now, limit);
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
