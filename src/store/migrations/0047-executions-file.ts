import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { EXECUTIONS_SCHEMA } from '../execution-writer.js';

/**
 * SQLite: the trigger execution records move into a file of their own (`iotbridge-executions.sqlite`, attached to
 * the service's connection as `executions_db` by database.ts), written by a thread of its own
 * (execution-writer.ts). Queries keep naming `executions` alone: once the main file has no such table, SQLite
 * finds it in the attached one.
 *
 * In two steps, each its own transaction, so a crash loses nothing and a second run finishes the move: the rows
 * are copied (`insert or ignore`: a row copied before is kept once), then the main file's table is dropped. A
 * transaction over two files is atomic in each only (WAL), hence not both steps in one. PostgreSQL keeps the
 * table where it is.
 */
export function executionsFile(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') return;
      const schema = sql.raw(EXECUTIONS_SCHEMA);
      await db.transaction().execute(async (trx) => {
        await sql`create table if not exists ${schema}.executions (
          seq integer primary key, id text not null, account_id text not null, trigger_id text not null, event_id text not null,
          event_type text not null, started_at integer not null, duration_ms real not null, status text not null, error text, line integer,
          logs text not null, test integer not null, context text default '{}' not null, groups text default '[]' not null)`.execute(trx);
        await sql`create index if not exists ${schema}.executions_account on executions (account_id, seq)`.execute(trx);
        await sql`create index if not exists ${schema}.executions_trigger on executions (trigger_id, seq)`.execute(trx);
        if (!(await inMainFile(trx))) return;
        const columns = sql.raw('seq, id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups');
        await sql`insert or ignore into ${schema}.executions (${columns}) select ${columns} from main.executions order by seq`.execute(trx);
      });
      if (await inMainFile(db)) await sql`drop table main.executions`.execute(db);
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function inMainFile(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql`select 1 from main.sqlite_master where type = 'table' and name = 'executions'`.execute(db);
  return rows.length > 0;
}
