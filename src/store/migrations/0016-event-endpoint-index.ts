import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The history's by-endpoint index becomes a table written in bulk. An `events (endpoint_id, seq)` index
 * touched one index page per endpoint in every commit of the event pipeline: with a long history, over a
 * third of the service's work. `event_endpoints` is filled by a background pass from the events after its
 * cursor (`event_cursor` row `endpoint-index`), many rows per page; searches read the newest events, not
 * yet indexed, by their seq range.
 */
export function eventEndpointIndex(dialect: DialectName): Migration {
  const seq = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('event_endpoints')
        .addColumn('endpoint_id', 'text', (c) => c.notNull())
        .addColumn('seq', seq, (c) => c.notNull())
        .addPrimaryKeyConstraint('event_endpoints_pk', ['endpoint_id', 'seq'])
        // The primary key is the whole row: no second b-tree for a rowid.
        .$call((table) => (dialect === 'sqlite' ? table.modifyEnd(sql`without rowid`) : table))
        .execute();
      await sql`insert into event_endpoints (endpoint_id, seq) select endpoint_id, seq from events where endpoint_id is not null`.execute(db);
      await sql`insert into event_cursor (name, handled_through) select 'endpoint-index', coalesce(max(seq), 0) from events`.execute(db);
      await db.schema.dropIndex('events_endpoint').execute();
    },
  };
}
