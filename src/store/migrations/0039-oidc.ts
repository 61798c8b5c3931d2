import type { Kysely, Migration } from 'kysely';

/**
 * External sign-in (src/oidc/): the mapping set with `PUT /auth/oidc/mapping` (one row), and which user an
 * identity of a provider (issuer and subject) signed in as, per account: how users created by a sign-in are
 * recognised as external, and how a provider's unverified e-mail is kept from claiming someone else's user.
 */
export function oidc(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('oidc_mapping')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('mapping', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_by', 'text')
        .execute();
      await db.schema
        .createTable('oidc_identities')
        .addColumn('issuer', 'text', (c) => c.notNull())
        .addColumn('subject', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('last_sign_in_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('oidc_identities_pk', ['issuer', 'subject', 'account_id'])
        .execute();
      await db.schema.createIndex('oidc_identities_user').on('oidc_identities').column('user_id').execute();
    },
  };
}
