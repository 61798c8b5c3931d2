import type { Kysely, Selectable } from 'kysely';
import type { PageRequest } from '../domain/pagination.js';
import type { Service, ServiceOptions, ServiceStore, ServiceType } from '../domain/services.js';
import type { EndpointReadCache } from './endpoint-read-cache.js';
import { fromJson, toJson, type Schema, type ServicesTable } from './schema.js';
import { pageOf, toIso, toMs } from './sql.js';

export class SqlServiceStore implements ServiceStore {
  readonly #db: Kysely<Schema>;
  /** Forgets every endpoint after a delete that takes endpoints with it. */
  readonly #endpointCache: EndpointReadCache | undefined;

  constructor(db: Kysely<Schema>, endpointCache?: EndpointReadCache) {
    this.#db = db;
    this.#endpointCache = endpointCache;
  }

  async insert(service: Service): Promise<void> {
    await this.#db.insertInto('services').values(toRow(service)).execute();
  }

  async get(accountId: string, id: string): Promise<Service | undefined> {
    const row = await this.#db.selectFrom('services').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toService(row);
  }

  async find(id: string): Promise<Service | undefined> {
    const row = await this.#db.selectFrom('services').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toService(row);
  }

  async listByType(type: ServiceType): Promise<Service[]> {
    const rows = await this.#db.selectFrom('services').selectAll().where('type', '=', type).orderBy('created_at').orderBy('id').execute();
    return rows.map(toService);
  }

  async list(accountId: string, filter: { type?: ServiceType | undefined }, request: PageRequest) {
    const base = this.#db
      .selectFrom('services')
      .where('account_id', '=', accountId)
      .$if(filter.type !== undefined, (q) => q.where('type', '=', filter.type as string));
    return pageOf(base, (q) => q.selectAll().orderBy('name').orderBy('id'), request, toService);
  }

  async update(service: Service): Promise<void> {
    const { id: _id, created_at: _created, account_id: _account, ...changes } = toRow(service);
    try {
      await this.#db.updateTable('services').set(changes).where('id', '=', service.id).execute();
    } finally {
      // Device look-ups go by the service's type (which changes only while the service has no endpoints).
      this.#endpointCache?.forgetAll();
    }
  }

  async endpointCount(serviceId: string): Promise<number> {
    const row = await this.#db
      .selectFrom('endpoints')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('service_id', '=', serviceId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async delete(id: string): Promise<void> {
    try {
      await this.#db.transaction().execute(async (trx) => {
        await trx.deleteFrom('endpoints').where('service_id', '=', id).execute();
        await trx.deleteFrom('services').where('id', '=', id).execute();
      });
    } finally {
      this.#endpointCache?.forgetAll();
    }
  }
}

function toRow(service: Service) {
  return {
    id: service.id,
    account_id: service.accountId,
    name: service.name,
    type: service.type,
    options: toJson(service.options),
    created_at: toMs(service.createdAt),
    updated_at: toMs(service.updatedAt),
  };
}

function toService(row: Selectable<ServicesTable>): Service {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    type: row.type as ServiceType,
    options: fromJson<ServiceOptions>(row.options),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
