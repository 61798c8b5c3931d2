import type { Kysely, Migration } from 'kysely';

/**
 * Firmware-over-the-air jobs (`POST /fota/jobs`, `POST /endpoints/{ref}/fota`) and the devices in them, so that
 * a restart takes each device up where it was (docs/fota.md). A device row goes with its endpoint.
 */
export function fota(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('fota_jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('file', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('selector', 'text', (c) => c.notNull())
        .addColumn('concurrency', 'integer', (c) => c.notNull())
        .addColumn('rate_per_minute', 'integer')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('finished_at', 'bigint')
        .execute();
      await db.schema.createIndex('fota_jobs_account').on('fota_jobs').columns(['account_id', 'created_at']).execute();
      await db.schema.createIndex('fota_jobs_state').on('fota_jobs').columns(['state']).execute();
      await db.schema
        .createTable('fota_devices')
        .addColumn('job_id', 'text', (c) => c.notNull().references('fota_jobs.id').onDelete('cascade'))
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('step', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text')
        .addColumn('mode', 'text')
        .addColumn('update_result', 'integer')
        .addColumn('reason', 'text')
        .addColumn('failed_step', 'text')
        .addColumn('previous_version', 'text')
        .addColumn('version', 'text')
        .addColumn('started_at', 'bigint')
        .addColumn('finished_at', 'bigint')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('fota_devices_pk', ['job_id', 'endpoint_id'])
        .execute();
      await db.schema.createIndex('fota_devices_job_seq').on('fota_devices').columns(['job_id', 'seq']).execute();
      await db.schema.createIndex('fota_devices_endpoint').on('fota_devices').columns(['endpoint_id', 'updated_at']).execute();
    },
  };
}
