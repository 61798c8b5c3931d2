import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Solution templates (src/solutions/): the catalogue (name and version unique per account), one installation per
 * template name and account with the snapshot of what it applied, the history of installs, and the claims of
 * once-events (one per trigger and key: what makes the event fire exactly once).
 */
export function solutions(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('solution_templates')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('account_path', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('document', 'text', (c) => c.notNull())
        .addColumn('created_by', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addUniqueConstraint('solution_templates_account_name_version', ['account_id', 'name', 'version'])
        .execute();
      await db.schema
        .createTable('solution_installations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('template_name', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('snapshot', 'text', (c) => c.notNull())
        .addColumn('installed_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('installed_by', 'text', (c) => c.notNull())
        .addUniqueConstraint('solution_installations_account_template', ['account_id', 'template_name'])
        .execute();
      await db.schema
        .createTable('solution_history')
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('installation_id', 'text', (c) => c.notNull())
        .addColumn('template_id', 'text', (c) => c.notNull())
        .addColumn('template', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('details', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('acted_by', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('solution_history_account').on('solution_history').columns(['account_id', 'seq']).execute();
      await db.schema
        .createTable('once_events')
        .addColumn('trigger_id', 'text', (c) => c.notNull())
        .addColumn('claim_key', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('claimed_at', 'bigint', (c) => c.notNull())
        .addColumn('emitted_at', 'bigint')
        .addPrimaryKeyConstraint('once_events_pk', ['trigger_id', 'claim_key'])
        .execute();
      await db.schema.createIndex('once_events_unemitted').on('once_events').columns(['emitted_at', 'claimed_at']).execute();
    },
  };
}
