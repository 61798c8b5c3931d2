import type { Kysely, Migration } from 'kysely';

/**
 * Import jobs (`POST /imex/import`, src/imex/import-jobs.ts): what a caller was told (a job id) and how far the job
 * got, so `GET /imex/jobs/{id}` still answers after a restart or from another node. `counts` is the JSON of the
 * importer's counts (with the first refusals); `updated_at` is the running job's heartbeat.
 */
export function importJobs(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('import_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('dry_run', 'integer', (c) => c.notNull())
        .addColumn('counts', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .addColumn('finished_at', 'bigint')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('import_jobs_state').on('import_jobs').columns(['state', 'updated_at']).execute();
    },
  };
}
