import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * When each MQTT 5 session whose device is away ends (its Session Expiry Interval counted from the
 * disconnect, in ms since the epoch). A row is removed when the device reconnects or the session is forgotten.
 * MQTT 3.1.1 persistent sessions have no expiry and no row.
 */
export function mqttSessionExpiry(_dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('mqtt_session_expiry')
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('mqtt_session_expiry_pk', ['service_id', 'client_id'])
        .execute();
    },
  };
}
