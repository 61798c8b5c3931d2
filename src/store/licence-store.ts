import type { Kysely, Selectable } from 'kysely';
import type { LicenceRecord, LicenceStore } from '../licence/model.js';
import type { LicenceTable, Schema } from './schema.js';

/** The one row of the `licence` table (migration 0038). */
const ROW_ID = 1;

/** The installation's licence record, on SQLite and PostgreSQL alike. */
export class SqlLicenceStore implements LicenceStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async read(): Promise<LicenceRecord | undefined> {
    const row = await this.#db.selectFrom('licence').selectAll().where('id', '=', ROW_ID).executeTakeFirst();
    return row && toRecord(row);
  }

  async startGrace(now: number): Promise<LicenceRecord> {
    // Nodes starting together: the first insert wins, the others read what it stored.
    await this.#db
      .insertInto('licence')
      .values({ id: ROW_ID, licence: null, grace_started_at: now, updated_at: now })
      .onConflict((conflict) => conflict.column('id').doNothing())
      .execute();
    return toRecord(await this.#db.selectFrom('licence').selectAll().where('id', '=', ROW_ID).executeTakeFirstOrThrow());
  }

  async install(text: string, now: number): Promise<void> {
    await this.#db
      .insertInto('licence')
      .values({ id: ROW_ID, licence: text, grace_started_at: now, updated_at: now })
      .onConflict((conflict) => conflict.column('id').doUpdateSet({ licence: text, updated_at: now }))
      .execute();
  }
}

function toRecord(row: Selectable<LicenceTable>): LicenceRecord {
  return { licence: row.licence, graceStartedAt: Number(row.grace_started_at), updatedAt: Number(row.updated_at) };
}
