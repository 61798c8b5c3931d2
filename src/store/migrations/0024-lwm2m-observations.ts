import type { Kysely, Migration } from 'kysely';

/**
 * Active LwM2M observations (Core 6.4.1), so that a restart does not forget them: a device's notifications
 * for an observation made before still become `lwm2m-data` with the same token. `paths` (JSON) is the list
 * of an Observe-Composite; `format` the Content-Format it was made in.
 */
export function lwm2mObservations(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lwm2m_observations')
        .addColumn('token', 'text', (c) => c.primaryKey())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('registration_id', 'text', (c) => c.notNull())
        .addColumn('operation', 'text', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('paths', 'text')
        .addColumn('format', 'integer', (c) => c.notNull())
        .addColumn('since', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('lwm2m_observations_endpoint').on('lwm2m_observations').column('endpoint_id').execute();
    },
  };
}
