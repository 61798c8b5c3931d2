import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Device presence, shared by every protocol: whether an endpoint is connected, when it was last heard
 * from, and when it counts as missing (last seen + lifetime or secondsBeforeMissing), so one indexed
 * query finds the endpoints that went silent.
 */
export function endpointPresence(dialect: DialectName): Migration {
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('endpoints').addColumn('state', 'text', (c) => c.notNull().defaultTo(sql`'unavailable'`)).execute();
      await db.schema.alterTable('endpoints').addColumn('last_seen_at', time).execute();
      await db.schema.alterTable('endpoints').addColumn('missing_after', time).execute();
      await db.schema.createIndex('endpoints_missing').on('endpoints').columns(['state', 'missing_after']).execute();
    },
  };
}
