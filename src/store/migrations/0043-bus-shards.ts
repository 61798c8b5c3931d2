import { sql, type Kysely, type Migration } from 'kysely';

/** The number of shards, fixed here as in src/events/shards.ts (BUS_SHARDS): a migration does not change later. */
const SHARDS = 64;

/**
 * Cluster mode's event bus (docs/cluster.md, "Event bus"): each event's shard, one cursor and lease per shard, and
 * the nodes alive. Events accepted before this migration are in shard 0; every shard starts at the bus cursor, so
 * nothing handled is handled again. Times are ms since the epoch, taken from the database's clock.
 */
export function busShards(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('events').addColumn('bus_shard', 'smallint', (c) => c.notNull().defaultTo(0)).execute();
      await db.schema
        .createTable('bus_shards')
        .addColumn('shard', 'smallint', (c) => c.primaryKey())
        .addColumn('handled_through', 'bigint', (c) => c.notNull())
        .addColumn('owner', 'text')
        .addColumn('lease_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      const cursor = await sql<{ handled_through: number | string }>`select handled_through from event_cursor where name = 'bus'`.execute(db);
      const through = Number(cursor.rows[0]?.handled_through ?? 0);
      await db
        .insertInto('bus_shards')
        .values(Array.from({ length: SHARDS }, (_, shard) => ({ shard, handled_through: through, lease_until: 0 })))
        .execute();
      await db.schema
        .createTable('bus_nodes')
        .addColumn('node', 'text', (c) => c.primaryKey())
        .addColumn('seen_until', 'bigint', (c) => c.notNull())
        .addColumn('started_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
