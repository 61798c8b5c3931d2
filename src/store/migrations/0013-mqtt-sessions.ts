import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * What the MQTT broker keeps across a restart, per service (each MQTT service is its own broker): retained
 * messages, the subscriptions of persistent sessions (clean session 0), the QoS 1/2 messages queued for
 * them, and QoS 2 messages received but not yet released. A session's client id is its endpoint's id, so
 * deleting the endpoint (or the service) deletes its session.
 */
export function mqttSessions(dialect: DialectName): Migration {
  const serial = dialect === 'postgres' ? 'bigserial' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('mqtt_retained')
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('packet', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('mqtt_retained_pk', ['service_id', 'topic'])
        .execute();
      await db.schema
        .createTable('mqtt_subscriptions')
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('qos', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('mqtt_subscriptions_pk', ['service_id', 'client_id', 'topic'])
        .execute();
      await db.schema
        .createTable('mqtt_outgoing')
        .addColumn('seq', serial, (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('broker_id', 'text', (c) => c.notNull())
        .addColumn('broker_counter', 'bigint', (c) => c.notNull())
        .addColumn('message_id', 'integer')
        .addColumn('packet', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('mqtt_outgoing_client').on('mqtt_outgoing').columns(['service_id', 'client_id', 'seq']).execute();
      await db.schema
        .createTable('mqtt_incoming')
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id').onDelete('cascade'))
        .addColumn('client_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('message_id', 'integer', (c) => c.notNull())
        .addColumn('packet', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('mqtt_incoming_pk', ['service_id', 'client_id', 'message_id'])
        .execute();
    },
  };
}
