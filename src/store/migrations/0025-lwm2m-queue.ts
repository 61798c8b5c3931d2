import type { Kysely, Migration } from 'kysely';

/**
 * Requests waiting for an LwM2M device whose outcome is an `lwm2m-result` event (asynchronous requests with a
 * context, `lwm2m.proxy_send`), so that a restart delivers them at the device's next update instead of
 * losing them. `seq` keeps their order per device; `kind` says whether a new registration purges the request
 * (`queued`, SPEC States) or it waits through it (`proxy`, until `expires_at`).
 */
export function lwm2mQueue(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lwm2m_queue')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('seq', 'bigint', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('request', 'text', (c) => c.notNull())
        .addColumn('context', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('lwm2m_queue_endpoint').on('lwm2m_queue').columns(['endpoint_id', 'seq']).execute();
    },
  };
}
