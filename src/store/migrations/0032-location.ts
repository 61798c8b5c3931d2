import type { Kysely, Migration } from 'kysely';

/**
 * Location (issue 19, src/location/): the providers an account configured (`location_services`, in fallback
 * order, API keys write-only), the cell and Wi-Fi positions imported into an embedded provider (OpenCelliD CSV;
 * keyed for the point look-ups geolocation makes), the account's geofences, which geofences each endpoint is
 * inside (so enter/exit survive a restart), each endpoint's last known position (the map), and the lookups each
 * account made per day and kind (counted in memory, added here every few seconds).
 */
export function location(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('location_services')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('url', 'text')
        .addColumn('api_key', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('location_services_account').on('location_services').columns(['account_id', 'position']).execute();

      // Cells by the identity a device reports; a service's rows go with it.
      await db.schema
        .createTable('location_cells')
        .addColumn('service_id', 'text', (c) => c.notNull().references('location_services.id').onDelete('cascade'))
        .addColumn('radio', 'text', (c) => c.notNull())
        .addColumn('mcc', 'integer', (c) => c.notNull())
        .addColumn('mnc', 'integer', (c) => c.notNull())
        .addColumn('area', 'bigint', (c) => c.notNull())
        .addColumn('cell', 'bigint', (c) => c.notNull())
        .addColumn('lat', 'double precision', (c) => c.notNull())
        .addColumn('lon', 'double precision', (c) => c.notNull())
        .addColumn('range', 'integer', (c) => c.notNull())
        .addColumn('samples', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('location_cells_pk', ['service_id', 'radio', 'mcc', 'mnc', 'area', 'cell'])
        .execute();
      await db.schema
        .createTable('location_wifi')
        .addColumn('service_id', 'text', (c) => c.notNull().references('location_services.id').onDelete('cascade'))
        .addColumn('mac', 'text', (c) => c.notNull())
        .addColumn('lat', 'double precision', (c) => c.notNull())
        .addColumn('lon', 'double precision', (c) => c.notNull())
        .addColumn('range', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('location_wifi_pk', ['service_id', 'mac'])
        .execute();

      await db.schema
        .createTable('geofences')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('shape', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('geofences_account_name').on('geofences').columns(['account_id', 'name']).execute();

      // One row per endpoint and geofence it is inside; the row goes when it leaves.
      await db.schema
        .createTable('geofence_presence')
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('geofence_id', 'text', (c) => c.notNull().references('geofences.id').onDelete('cascade'))
        .addColumn('entered_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('geofence_presence_pk', ['endpoint_id', 'geofence_id'])
        .execute();
      await db.schema.createIndex('geofence_presence_geofence').on('geofence_presence').column('geofence_id').execute();

      await db.schema
        .createTable('endpoint_positions')
        .addColumn('endpoint_id', 'text', (c) => c.primaryKey().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('lat', 'double precision', (c) => c.notNull())
        .addColumn('lon', 'double precision', (c) => c.notNull())
        .addColumn('accuracy', 'double precision')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('location_usage')
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('count', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('location_usage_pk', ['account_id', 'day', 'kind'])
        .execute();
      await db.schema.createIndex('endpoint_positions_account').on('endpoint_positions').columns(['account_id', 'at']).execute();
    },
  };
}
