import type { Kysely, Migration } from 'kysely';

/**
 * Per-endpoint LwM2M bootstrap configurations (`PUT /endpoints/{ref}/bootstrap`): what the Bootstrap-Server
 * writes into a device at its Bootstrap-Request. The per-service default is the service option `bootstrap`.
 */
export function lwm2mBootstrapConfigs(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('lwm2m_bootstrap_configs')
        .addColumn('endpoint_id', 'text', (c) => c.primaryKey().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
