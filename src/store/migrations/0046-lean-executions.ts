import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { dropPostgresUniqueOn } from './postgres-constraints.js';

/**
 * An execution record is written for every trigger run, under load the most frequent write after the event
 * itself, and two of its costs bought nothing: the unique index on `id` (no query looks an execution up by it;
 * ids are random and sortable, so unique without it) and, on SQLite, AUTOINCREMENT (a second write per row, to
 * `sqlite_sequence`). Timed alone on one table (docs/performance.md, session 26): 6.5–8.3 µs a row before,
 * 4.5–5.3 µs without both; inside the service's hot path ~2 µs less a record.
 *
 * Without AUTOINCREMENT, SQLite numbers a row one past the highest seq present: retention deletes the lowest
 * seqs, so numbers only start again from 1 once every record is gone (nothing keeps an execution's seq: pages
 * are read by it, and none is left to page through).
 *
 * PostgreSQL drops the constraint (its name was left to PostgreSQL, so it is found in the catalogue). SQLite
 * cannot drop a column constraint: the table is rebuilt the way its manual says (lang_altertable.html, "Making
 * Other Kinds Of Table Schema Changes") in one transaction — create `executions_new`, copy, drop, rename, the
 * two indexes again. No foreign key refers to it. Running it again on the new shape copies the rows again and
 * changes nothing (SQLite records the migration after this commits).
 */
export function leanExecutions(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') await dropPostgresUniqueOn(db, 'executions', 'id');
      else await rebuildSqliteExecutions(db);
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function rebuildSqliteExecutions(db: Kysely<any>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.schema.dropTable('executions_new').ifExists().execute();
    await trx.schema
      .createTable('executions_new')
      // The rowid itself: numbered one past the highest present.
      .addColumn('seq', 'integer', (c) => c.primaryKey())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('trigger_id', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('started_at', 'integer', (c) => c.notNull())
      .addColumn('duration_ms', 'real', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('line', 'integer')
      .addColumn('logs', 'text', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull())
      .addColumn('context', 'text', (c) => c.notNull().defaultTo(sql`'{}'`))
      .addColumn('groups', 'text', (c) => c.notNull().defaultTo(sql`'[]'`))
      .execute();
    const columns = sql.raw('seq, id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups');
    await sql`insert into executions_new (${columns}) select ${columns} from executions order by seq`.execute(trx);
    await trx.schema.dropTable('executions').execute();
    await trx.schema.alterTable('executions_new').renameTo('executions').execute();
    await trx.schema.createIndex('executions_account').on('executions').columns(['account_id', 'seq']).execute();
    await trx.schema.createIndex('executions_trigger').on('executions').columns(['trigger_id', 'seq']).execute();
  });
}
