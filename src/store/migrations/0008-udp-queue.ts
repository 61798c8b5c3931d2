import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** Messages `udp.queue` holds until the device's next datagram; they go with their endpoint. */
export function udpQueue(dialect: DialectName): Migration {
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('udp_queue')
        .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) => (dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('expires_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('udp_queue_endpoint').on('udp_queue').columns(['endpoint_id', 'seq']).execute();
      await db.schema.createIndex('udp_queue_expiry').on('udp_queue').column('expires_at').execute();
    },
  };
}
