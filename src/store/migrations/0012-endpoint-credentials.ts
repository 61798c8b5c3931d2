import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The password an MQTT device logs in with (username = endpoint key), scrypt-hashed; at most one per
 * endpoint, gone with its endpoint. Numbered after 0011 rather than in the free 0007 slot: Kysely's migrator
 * refuses a new migration that sorts before ones a database has already run (0008, 0011).
 */
export function endpointCredentials(dialect: DialectName): Migration {
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('endpoint_credentials')
        .addColumn('endpoint_id', 'text', (c) => c.primaryKey().references('endpoints.id').onDelete('cascade'))
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
    },
  };
}
