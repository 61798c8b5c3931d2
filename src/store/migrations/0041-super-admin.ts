import type { Kysely, Migration } from 'kysely';

/**
 * Super-Admin actions (src/admin/): one row per account an operator suspended or gave limits to (accounts
 * without a row have neither), and who a support token impersonates for (`tokens.impersonated_by`).
 */
export function superAdmin(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('account_controls')
        .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
        .addColumn('suspended_at', 'bigint')
        .addColumn('suspended_reason', 'text')
        .addColumn('suspended_by', 'text')
        .addColumn('max_endpoints', 'integer')
        .addColumn('events_per_second', 'integer')
        .addColumn('script_cpu_ms_per_minute', 'integer')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.alterTable('tokens').addColumn('impersonated_by', 'text').execute();
    },
  };
}
