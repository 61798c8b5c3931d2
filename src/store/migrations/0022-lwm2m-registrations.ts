import type { Kysely, Migration } from 'kysely';

/**
 * Live LwM2M registrations (OMA LwM2M Core 6.2), so that a restart does not forget them: a device's next
 * Update to `/rd/<id>` is answered 2.04 instead of 4.04. One row per endpoint at most (a new Register
 * replaces it); `parameters` is what the device said (lifetime, version, binding, object links, formats).
 */
export function lwm2mRegistrations(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lwm2m_registrations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().unique().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('service_id', 'text', (c) => c.notNull())
        .addColumn('peer_address', 'text', (c) => c.notNull())
        .addColumn('peer_port', 'integer', (c) => c.notNull())
        .addColumn('parameters', 'text', (c) => c.notNull())
        .addColumn('registered_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
