import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Account logs (src/logs/): one row per entry, numbered by `seq` in the order written. Searches walk an account's
 * entries newest first through `logs_account_time`; retention deletes by `logs_time`. No foreign key to the
 * account: entries buffered for an account deleted meanwhile would fail their whole batch, and an account's
 * entries go with retention like its history.
 */
export function logs(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('logs')
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('time', 'bigint', (c) => c.notNull())
        .addColumn('level', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text')
        .addColumn('endpoint_key', 'text')
        .addColumn('trigger_id', 'text')
        .addColumn('data', 'text')
        .execute();
      await db.schema.createIndex('logs_account_time').on('logs').columns(['account_id', 'time', 'seq']).execute();
      await db.schema.createIndex('logs_time').on('logs').column('time').execute();
    },
  };
}
