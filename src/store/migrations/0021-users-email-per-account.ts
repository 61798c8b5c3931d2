import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';
import { dropPostgresUniqueOn } from './postgres-constraints.js';

/**
 * A user's email is unique within its account (`users_account_email`), no longer platform-wide: creating a user
 * answered 409 for an email another tenant used, which told that the address existed there. Sign-in by email
 * alone reads `users_email` (email, then oldest first). `users_account` goes: the new unique index leads with
 * `account_id` and serves the same look-ups (and lists ordered by email).
 *
 * PostgreSQL drops the unique constraint 0001 put on the column (its name, `users_email_key`, was left to
 * PostgreSQL, so it is found in the catalogue) inside the migrator's transaction. SQLite cannot drop a column
 * constraint, so the table is rebuilt the way its manual says (lang_altertable.html, "Making Other Kinds Of
 * Table Schema Changes"): create `users_new`, copy, drop `users`, rename `users_new` to `users`.
 * `tokens.user_id` references `users`, so foreign keys must be OFF meanwhile: with them on, dropping `users`
 * deletes its rows first and fails on the tokens that reference them (deferring the check does not help: the
 * rows that come back under the new name do not satisfy it again). The pragma is a no-op inside a
 * transaction; Kysely's migrator opens none on SQLite (`supportsTransactionalDdl` is false), so this migration
 * sets it, runs the rebuild in its own transaction, checks the foreign keys of `users` and `tokens` before the
 * commit and turns them back on whatever happens. Renaming the old table aside first would rewrite `tokens`'
 * reference to the old name (with or without `legacy_alter_table`, once foreign keys are on).
 * Running it again on the new shape changes nothing: SQLite records the migration after this commits, outside
 * its transaction, so a crash between the two runs it again; upgrade tests rewind it by forgetting it.
 * Numbered after 0020 (the migrator refuses a migration that sorts before one a database has run).
 */
export function usersEmailPerAccount(dialect: DialectName): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      if (dialect === 'postgres') await alterPostgresUsers(db);
      else await rebuildSqliteUsers(db);
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function alterPostgresUsers(db: Kysely<any>): Promise<void> {
  // 0001 left the name of the unique constraint on `email` to PostgreSQL (`users_email_key`).
  await dropPostgresUniqueOn(db, 'users', 'email');
  const { rows: present } = await sql`select 1 from pg_constraint where conrelid = 'users'::regclass and conname = 'users_account_email'`.execute(db);
  if (present.length === 0) await sql`alter table users add constraint users_account_email unique (account_id, email)`.execute(db);
  await db.schema.createIndex('users_email').ifNotExists().on('users').columns(['email', 'created_at', 'id']).execute();
  await db.schema.dropIndex('users_account').ifExists().execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function rebuildSqliteUsers(db: Kysely<any>): Promise<void> {
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    const { rows } = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
    if (rows[0]?.foreign_keys !== 0) throw new Error('users rebuild: foreign keys are still on (a transaction is open), so dropping users would fail');
    await db.transaction().execute(async (trx) => {
      await trx.schema.dropTable('users_new').ifExists().execute();
      await trx.schema
        .createTable('users_new')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('super_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'integer', (c) => c.notNull())
        .addUniqueConstraint('users_account_email', ['account_id', 'email'])
        .execute();
      await sql`insert into users_new (id, account_id, email, name, password_hash, super_admin, created_at, updated_at)
        select id, account_id, email, name, password_hash, super_admin, created_at, updated_at from users`.execute(trx);
      await trx.schema.dropTable('users').execute();
      await trx.schema.alterTable('users_new').renameTo('users').execute();
      await trx.schema.createIndex('users_email').on('users').columns(['email', 'created_at', 'id']).execute();
      for (const table of ['users', 'tokens']) {
        const broken = await sql`pragma foreign_key_check(${sql.raw(table)})`.execute(trx);
        if (broken.rows.length > 0) throw new Error(`users rebuild: ${broken.rows.length} foreign key violations in ${table}, e.g. ${JSON.stringify(broken.rows[0])}`);
      }
    });
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}
