import type { Kysely, Migration } from 'kysely';

/**
 * Scheduled reports (src/reports/report-mailer.ts): a report's schedule as JSON, when it is mailed next (found by
 * `reports_next_send` every check) and when it last was.
 */
export function reportSchedules(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('reports').addColumn('schedule', 'text').execute();
      await db.schema.alterTable('reports').addColumn('next_send_at', 'bigint').execute();
      await db.schema.alterTable('reports').addColumn('last_sent_at', 'bigint').execute();
      await db.schema.createIndex('reports_next_send').on('reports').column('next_send_at').execute();
    },
  };
}
