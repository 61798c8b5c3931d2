import type { Kysely } from 'kysely';
import type { IdentityLink, OidcStore, StoredMapping } from '../oidc/model.js';
import type { Schema } from './schema.js';

/** The one row of `oidc_mapping` (migration 0039). */
const ROW_ID = 1;

/** External sign-in's mapping and identity links, on SQLite and PostgreSQL alike. */
export class SqlOidcStore implements OidcStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async readMapping(): Promise<StoredMapping | undefined> {
    const row = await this.#db.selectFrom('oidc_mapping').selectAll().where('id', '=', ROW_ID).executeTakeFirst();
    return row && { mapping: row.mapping, updatedAt: Number(row.updated_at), updatedBy: row.updated_by };
  }

  async writeMapping(mapping: StoredMapping): Promise<void> {
    const values = { mapping: mapping.mapping, updated_at: mapping.updatedAt, updated_by: mapping.updatedBy };
    await this.#db
      .insertInto('oidc_mapping')
      .values({ id: ROW_ID, ...values })
      .onConflict((conflict) => conflict.column('id').doUpdateSet(values))
      .execute();
  }

  async findUser(issuer: string, subject: string, accountId: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('oidc_identities')
      .select('user_id')
      .where('issuer', '=', issuer)
      .where('subject', '=', subject)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row?.user_id;
  }

  async link(link: IdentityLink, now: number): Promise<void> {
    await this.#db
      .insertInto('oidc_identities')
      .values({ issuer: link.issuer, subject: link.subject, account_id: link.accountId, user_id: link.userId, created_at: now, last_sign_in_at: now })
      .onConflict((conflict) => conflict.columns(['issuer', 'subject', 'account_id']).doUpdateSet({ user_id: link.userId, last_sign_in_at: now }))
      .execute();
  }
}
