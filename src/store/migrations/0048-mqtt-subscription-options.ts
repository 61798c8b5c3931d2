import type { Kysely, Migration } from 'kysely';

/**
 * MQTT 5 subscription options of a persistent session's subscriptions (MQTT 5.0, 3.8.3.1), so that a reconnection
 * or a restart keeps them: No Local (1: the device's own publications are not sent back to it) and Retain Handling
 * (0–2, as the device asked at its last SUBSCRIBE of the filter). Rows stored before this migration are 0, MQTT
 * 3.1.1's behaviour.
 */
export function mqttSubscriptionOptions(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      for (const column of ['no_local', 'retain_handling']) {
        await db.schema
          .alterTable('mqtt_subscriptions')
          .addColumn(column, 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
      }
    },
  };
}
