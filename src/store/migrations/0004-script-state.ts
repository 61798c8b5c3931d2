import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** What scripts add to their executions (context, groups), and the per-account script queues. */
export function scriptState(dialect: DialectName): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('executions').addColumn('context', json, (c) => c.notNull().defaultTo(sql`'{}'`)).execute();
      await db.schema.alterTable('executions').addColumn('groups', json, (c) => c.notNull().defaultTo(sql`'[]'`)).execute();
      await db.schema
        .createTable('script_queues')
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', json, (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('script_queues_name').on('script_queues').columns(['account_id', 'name', 'seq']).execute();
    },
  };
}
