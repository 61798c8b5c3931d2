import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** The event history and the queue of accepted events not yet handled. */
export function events(dialect: DialectName): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('events')
        // The order events were accepted in: history pages and queue order follow it.
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('service_id', 'text')
        .addColumn('endpoint_id', 'text')
        .addColumn('endpoint_key', 'text')
        .addColumn('time', time, (c) => c.notNull())
        .addColumn('data', json, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('events_account').on('events').columns(['account_id', 'seq']).execute();
      await db.schema.createIndex('events_endpoint').on('events').columns(['endpoint_id', 'seq']).execute();
      await db.schema.createIndex('events_time').on('events').column('time').execute();

      await db.schema
        .createTable('event_queue')
        .addColumn('event_seq', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey())
        .execute();
    },
  };
}
