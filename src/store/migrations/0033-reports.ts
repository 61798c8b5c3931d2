import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Reports (src/reports/): one row per report, names unique per account; entries with an increasing id (the
 * publication order and the paging cursor), read by report and time.
 */
export function reports(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('reports')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('columns', 'text', (c) => c.notNull())
        .addColumn('retention_days', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('reports_account_name', ['account_id', 'name'])
        .execute();
      await db.schema
        .createTable('report_entries')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('report_id', 'text', (c) => c.notNull().references('reports.id').onDelete('cascade'))
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('report_entries_report_time').on('report_entries').columns(['report_id', 'time', 'id']).execute();
      await db.schema.createIndex('report_entries_report_id').on('report_entries').columns(['report_id', 'id']).execute();
    },
  };
}
