import type { Kysely, Migration } from 'kysely';

/**
 * The last value read or notified of every LwM2M resource, per endpoint (`lwm2m.lastKnown`, `GET
 * /endpoints/{ref}/lwm2m/objects`), so that a restart does not forget them. `record` is the JSON record
 * (`{path, type, value, time?}`) as events carry it.
 */
export function lwm2mLastKnown(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lwm2m_last_known')
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('record', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('lwm2m_last_known_pk', ['endpoint_id', 'path'])
        .execute();
    },
  };
}
