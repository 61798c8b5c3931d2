import type { Kysely, Selectable } from 'kysely';
import type { PageRequest } from '../domain/pagination.js';
import type { UserRecord, UserStore } from '../domain/users.js';
import { AppError } from '../errors.js';
import type { Schema, UsersTable } from './schema.js';
import { isUniqueViolation, pageOf, toIso, toMs } from './sql.js';

export class SqlUserStore implements UserStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insert(user: UserRecord): Promise<void> {
    try {
      await this.#db
        .insertInto('users')
        .values({
          id: user.id,
          account_id: user.accountId,
          email: user.email,
          name: user.name,
          password_hash: user.passwordHash,
          super_admin: user.superAdmin ? 1 : 0,
          created_at: toMs(user.createdAt),
          updated_at: toMs(user.updatedAt),
        })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('IOTB_USER_EMAIL_TAKEN');
      throw error;
    }
  }

  async findByEmail(accountId: string, email: string): Promise<UserRecord | undefined> {
    const row = await this.#db.selectFrom('users').selectAll().where('account_id', '=', accountId).where('email', '=', email).executeTakeFirst();
    return row && toUser(row);
  }

  async listByEmail(email: string, limit: number): Promise<UserRecord[]> {
    const rows = await this.#db.selectFrom('users').selectAll().where('email', '=', email).orderBy('created_at').orderBy('id').limit(limit).execute();
    return rows.map(toUser);
  }

  async get(accountId: string, id: string): Promise<UserRecord | undefined> {
    const row = await this.#db.selectFrom('users').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toUser(row);
  }

  async list(accountId: string, request: PageRequest) {
    const base = this.#db.selectFrom('users').where('account_id', '=', accountId);
    return pageOf(base, (q) => q.selectAll().orderBy('email'), request, toUser);
  }

  async update(id: string, changes: { name?: string; passwordHash?: string; updatedAt: string }): Promise<void> {
    await this.#db
      .updateTable('users')
      .set({
        ...(changes.name === undefined ? {} : { name: changes.name }),
        ...(changes.passwordHash === undefined ? {} : { password_hash: changes.passwordHash }),
        updated_at: toMs(changes.updatedAt),
      })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('tokens').where('user_id', '=', id).execute();
      await trx.deleteFrom('users').where('id', '=', id).execute();
    });
  }
}

function toUser(row: Selectable<UsersTable>): UserRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    email: row.email,
    name: row.name,
    superAdmin: row.super_admin === 1,
    passwordHash: row.password_hash,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
