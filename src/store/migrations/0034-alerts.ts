import type { Kysely, Migration } from 'kysely';

/**
 * Alerts (src/alerts/): rules per account, and alert instances with their state, the rule and endpoint they
 * belong to (at most one not closed per rule and endpoint: found by `alerts_open`) and their history as JSON.
 */
export function alerts(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('alert_rules')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('severity', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('condition', 'text', (c) => c.notNull())
        .addColumn('notify', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alert_rules_account').on('alert_rules').column('account_id').execute();
      await db.schema
        .createTable('alerts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('rule_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('severity', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text')
        .addColumn('endpoint_key', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('value', 'text')
        .addColumn('occurrences', 'integer', (c) => c.notNull())
        .addColumn('opened_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('closed_at', 'bigint')
        .addColumn('history', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alerts_account_opened').on('alerts').columns(['account_id', 'opened_at']).execute();
      await db.schema.createIndex('alerts_open').on('alerts').columns(['rule_id', 'endpoint_id', 'state']).execute();
    },
  };
}
