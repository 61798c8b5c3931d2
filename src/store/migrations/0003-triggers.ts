import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** Triggers and the record of their executions. */
export function triggers(dialect: DialectName): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('triggers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('events', json, (c) => c.notNull())
        .addColumn('filters', json, (c) => c.notNull())
        .addColumn('script', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('library', 'integer', (c) => c.notNull())
        .addColumn('globals', json, (c) => c.notNull())
        .addColumn('form', json, (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('triggers_account').on('triggers').columns(['account_id', 'name']).execute();

      await db.schema
        .createTable('executions')
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('trigger_id', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('started_at', time, (c) => c.notNull())
        .addColumn('duration_ms', 'real', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('line', 'integer')
        .addColumn('logs', json, (c) => c.notNull())
        .addColumn('test', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('executions_account').on('executions').columns(['account_id', 'seq']).execute();
      await db.schema.createIndex('executions_trigger').on('executions').columns(['trigger_id', 'seq']).execute();
    },
  };
}
