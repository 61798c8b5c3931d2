import type { Kysely, Selectable } from 'kysely';
import type { ImportJobRecord, ImportJobStore } from '../imex/import-job-store.js';
import { fromJson, toJson, type ImportJobsTable, type Schema } from './schema.js';

/** Import jobs (migration 0042), on SQLite and PostgreSQL alike. */
export class SqlImportJobStore implements ImportJobStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async save(job: ImportJobRecord): Promise<void> {
    const changing = { state: job.state, counts: toJson(job.counts), error: job.error, finished_at: job.finishedAt, updated_at: job.updatedAt };
    await this.#db
      .insertInto('import_jobs')
      .values({ id: job.id, account_id: job.accountId, dry_run: job.dryRun ? 1 : 0, started_at: job.startedAt, ...changing })
      .onConflict((conflict) => conflict.column('id').doUpdateSet(changing))
      .execute();
  }

  async get(accountId: string, id: string): Promise<ImportJobRecord | undefined> {
    const row = await this.#db.selectFrom('import_jobs').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && toRecord(row);
  }

  async failStale(staleBefore: number, error: string, now: number): Promise<number> {
    const result = await this.#db
      .updateTable('import_jobs')
      .set({ state: 'failed', error, finished_at: now, updated_at: now })
      .where('state', '=', 'running')
      .where('updated_at', '<', staleBefore)
      .executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  async deleteFinishedBefore(before: number): Promise<void> {
    await this.#db.deleteFrom('import_jobs').where('state', '!=', 'running').where('finished_at', '<', before).execute();
  }
}

function toRecord(row: Selectable<ImportJobsTable>): ImportJobRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    state: row.state as ImportJobRecord['state'],
    dryRun: Number(row.dry_run) === 1,
    counts: fromJson(row.counts),
    error: row.error,
    startedAt: Number(row.started_at),
    finishedAt: row.finished_at === null ? null : Number(row.finished_at),
    updatedAt: Number(row.updated_at),
  };
}
