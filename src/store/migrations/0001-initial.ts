import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** Accounts, users, tokens, services, endpoints with their tags and storage. */
export function initial(dialect: DialectName): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // Kysely's migration API is untyped by design: a migration runs against the schema as it was then.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('parent_id', 'text', (c) => c.references('accounts.id'))
        .addColumn('path', 'text', (c) => c.notNull().unique())
        .addColumn('external_refs', json, (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('accounts_parent').on('accounts').column('parent_id').execute();

      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('super_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('users_account').on('users').column('account_id').execute();

      await db.schema
        .createTable('tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
        .addColumn('super_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('user_id', 'text', (c) => c.references('users.id'))
        .addColumn('expires_at', time)
        .addColumn('created_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tokens_account').on('tokens').columns(['account_id', 'kind']).execute();
      await db.schema.createIndex('tokens_user').on('tokens').column('user_id').execute();

      await db.schema
        .createTable('services')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('options', json, (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('services_account').on('services').columns(['account_id', 'name']).execute();

      await db.schema
        .createTable('endpoints')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('service_id', 'text', (c) => c.notNull().references('services.id'))
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('tags', json, (c) => c.notNull())
        .addColumn('status_details', json, (c) => c.notNull())
        .addColumn('parameters', json, (c) => c.notNull())
        .addColumn('trace', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addUniqueConstraint('endpoints_service_key', ['service_id', 'key'])
        .execute();
      // `k.<key>` look-ups and key-prefix search within an account.
      await db.schema.createIndex('endpoints_account_key').on('endpoints').columns(['account_id', 'key']).execute();

      await db.schema
        .createTable('endpoint_tags')
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('endpoint_tags_pk', ['endpoint_id', 'name', 'value'])
        .execute();
      await db.schema
        .createIndex('endpoint_tags_lookup')
        .on('endpoint_tags')
        .columns(['account_id', 'name', 'value'])
        .execute();

      await db.schema
        .createTable('endpoint_storage')
        .addColumn('endpoint_id', 'text', (c) => c.notNull().references('endpoints.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', json, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addPrimaryKeyConstraint('endpoint_storage_pk', ['endpoint_id', 'name'])
        .execute();
    },
  };
}
