import type { Kysely, Migration } from 'kysely';
import type { DialectName } from '../database.js';

/** LwM2M object definitions uploaded by accounts: one per account and object id. */
export function objectModels(dialect: DialectName): Migration {
  const json = dialect === 'postgres' ? 'jsonb' : 'text';
  const time = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('object_models')
        // Deleting an account takes its definitions along, with no change to the account store.
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('object_id', 'integer', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('version', 'text', (c) => c.notNull())
        .addColumn('definition', json, (c) => c.notNull())
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addPrimaryKeyConstraint('object_models_pk', ['account_id', 'object_id'])
        .execute();
    },
  };
}
