import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The queue of accepted-but-unhandled events becomes a cursor: every event with `seq` at or below
 * `handled_through` is handled; those above it are handled again after a restart (at-least-once). One row
 * written per tick instead of a queue row inserted and deleted per event.
 */
export function eventCursor(dialect: DialectName): Migration {
  const seq = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('event_cursor')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('handled_through', seq, (c) => c.notNull())
        .execute();
      // What was still queued at the upgrade stays unhandled: the cursor stops just before the oldest of it.
      await sql`insert into event_cursor (name, handled_through)
        select 'bus', coalesce((select min(event_seq) - 1 from event_queue), (select max(seq) from events), 0)`.execute(db);
      await db.schema.dropTable('event_queue').execute();
    },
  };
}
