import type { Kysely, Migration } from 'kysely';

/**
 * DTLS security of endpoints (`PUT /endpoints/{ref}/security`): the mode, and for PSK the identity (unique
 * across accounts: it names the endpoint in the handshake) and the key. The key is kept as given (hex), as
 * the handshake needs it; it never leaves the service through the API.
 */
export function endpointSecurity(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('endpoint_security')
        .addColumn('endpoint_id', 'text', (c) => c.primaryKey().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('mode', 'text', (c) => c.notNull())
        .addColumn('psk_identity', 'text', (c) => c.unique())
        .addColumn('psk_key', 'text')
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
