import { sql, type Kysely, type Selectable } from 'kysely';
import type { CellIdentity, KnownCell, KnownWifi, LocationServiceRecord, LocationServiceStore, LocationServiceType } from '../location/model.js';
import type { CellRow, WifiRow } from '../location/opencellid-csv.js';
import type { LocationServicesTable, Schema } from './schema.js';

/** Rows per INSERT statement: 10 parameters a row stays far below both dialects' limits (SQLite 32766). */
const ROWS_PER_STATEMENT = 1000;

/** Location providers, their imported cell and Wi-Fi positions, and lookup counts (migration 0032). */
export class SqlLocationServiceStore implements LocationServiceStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async list(accountId: string): Promise<LocationServiceRecord[]> {
    const rows = await this.#db.selectFrom('location_services').selectAll().where('account_id', '=', accountId).orderBy('position').orderBy('created_at').execute();
    return rows.map(toRecord);
  }

  async get(accountId: string, id: string): Promise<LocationServiceRecord | undefined> {
    const row = await this.#db.selectFrom('location_services').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toRecord(row);
  }

  async insert(service: LocationServiceRecord): Promise<void> {
    await this.#db.insertInto('location_services').values(toRow(service)).execute();
  }

  async update(service: LocationServiceRecord): Promise<void> {
    const { id, account_id: accountId, ...changes } = toRow(service);
    await this.#db.updateTable('location_services').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const found = await trx.selectFrom('location_services').select('id').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      if (!found) return false;
      // Millions of imported rows go with it: deleted explicitly rather than trusting SQLite's foreign keys.
      await trx.deleteFrom('location_cells').where('service_id', '=', id).execute();
      await trx.deleteFrom('location_wifi').where('service_id', '=', id).execute();
      await trx.deleteFrom('location_services').where('id', '=', id).execute();
      return true;
    });
  }

  async putCells(serviceId: string, rows: readonly CellRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
        const values = rows.slice(start, start + ROWS_PER_STATEMENT).map((row) => ({
          service_id: serviceId, radio: row.radio, mcc: row.mcc, mnc: row.mnc, area: row.area, cell: row.cell,
          lat: row.lat, lon: row.lon, range: row.range, samples: row.samples,
        }));
        await trx
          .insertInto('location_cells')
          .values(values)
          .onConflict((oc) =>
            oc.columns(['service_id', 'radio', 'mcc', 'mnc', 'area', 'cell']).doUpdateSet({
              lat: (eb) => eb.ref('excluded.lat'),
              lon: (eb) => eb.ref('excluded.lon'),
              range: (eb) => eb.ref('excluded.range'),
              samples: (eb) => eb.ref('excluded.samples'),
            }),
          )
          .execute();
      }
    });
  }

  async putWifi(serviceId: string, rows: readonly WifiRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
        const values = rows.slice(start, start + ROWS_PER_STATEMENT).map((row) => ({ service_id: serviceId, mac: row.mac, lat: row.lat, lon: row.lon, range: row.range }));
        await trx
          .insertInto('location_wifi')
          .values(values)
          .onConflict((oc) =>
            oc.columns(['service_id', 'mac']).doUpdateSet({ lat: (eb) => eb.ref('excluded.lat'), lon: (eb) => eb.ref('excluded.lon'), range: (eb) => eb.ref('excluded.range') }),
          )
          .execute();
      }
    });
  }

  async clearPositions(serviceId: string): Promise<void> {
    await this.#db.deleteFrom('location_cells').where('service_id', '=', serviceId).execute();
    await this.#db.deleteFrom('location_wifi').where('service_id', '=', serviceId).execute();
  }

  async findCells(serviceId: string, cells: readonly CellIdentity[]): Promise<KnownCell[]> {
    if (cells.length === 0) return [];
    // Point look-ups on the primary key, one statement: (radio, mcc, mnc, area, cell) in a list of tuples.
    const rows = await this.#db
      .selectFrom('location_cells')
      .select(['radio', 'mcc', 'mnc', 'area', 'cell', 'lat', 'lon', 'range'])
      .where('service_id', '=', serviceId)
      .where((eb) => eb.or(cells.map((c) => eb.and([eb('radio', '=', c.radio), eb('mcc', '=', c.mcc), eb('mnc', '=', c.mnc), eb('area', '=', c.area), eb('cell', '=', c.cell)]))))
      .execute();
    return rows.map((row) => ({ ...row, area: Number(row.area), cell: Number(row.cell), lat: Number(row.lat), lon: Number(row.lon) }));
  }

  async findWifi(serviceId: string, macs: readonly string[]): Promise<KnownWifi[]> {
    if (macs.length === 0) return [];
    const rows = await this.#db.selectFrom('location_wifi').select(['mac', 'lat', 'lon', 'range']).where('service_id', '=', serviceId).where('mac', 'in', [...macs]).execute();
    return rows.map((row) => ({ ...row, lat: Number(row.lat), lon: Number(row.lon) }));
  }

  async countPositions(serviceId: string): Promise<{ cells: number; wifi: number }> {
    const [cells, wifi] = await Promise.all([
      this.#db.selectFrom('location_cells').select(sql<number | string>`count(*)`.as('n')).where('service_id', '=', serviceId).executeTakeFirstOrThrow(),
      this.#db.selectFrom('location_wifi').select(sql<number | string>`count(*)`.as('n')).where('service_id', '=', serviceId).executeTakeFirstOrThrow(),
    ]);
    return { cells: Number(cells.n), wifi: Number(wifi.n) };
  }

  async addUsage(rows: readonly { accountId: string; day: string; kind: string; count: number }[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      for (const row of rows) {
        await trx
          .insertInto('location_usage')
          .values({ account_id: row.accountId, day: row.day, kind: row.kind, count: row.count })
          .onConflict((oc) => oc.columns(['account_id', 'day', 'kind']).doUpdateSet({ count: sql`location_usage.count + excluded.count` }))
          .execute();
      }
    });
  }

  async usage(accountId: string, fromDay: string): Promise<Array<{ day: string; kind: string; count: number }>> {
    const rows = await this.#db.selectFrom('location_usage').select(['day', 'kind', 'count']).where('account_id', '=', accountId).where('day', '>=', fromDay).orderBy('day').orderBy('kind').execute();
    return rows.map((row) => ({ day: row.day, kind: row.kind, count: Number(row.count) }));
  }
}

function toRow(service: LocationServiceRecord): LocationServicesTable {
  return {
    id: service.id,
    account_id: service.accountId,
    name: service.name,
    type: service.type,
    position: service.position,
    url: service.url,
    api_key: service.apiKey,
    created_at: service.createdAt,
    updated_at: service.updatedAt,
  };
}

function toRecord(row: Selectable<LocationServicesTable>): LocationServiceRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    type: row.type as LocationServiceType,
    position: row.position,
    url: row.url,
    apiKey: row.api_key,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
