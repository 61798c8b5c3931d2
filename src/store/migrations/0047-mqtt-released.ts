import type { Kysely, Migration } from 'kysely';

/**
 * A QoS 2 message to a device whose PUBREC the broker has had: from then on it resends the PUBREL, not the PUBLISH
 * (MQTT-4.4.0-1, and the device may already have passed the message on). 1 once released; rows stored before
 * this migration are all 0, as the broker then treated them.
 */
export function mqttReleased(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('mqtt_outgoing')
        .addColumn('released', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
