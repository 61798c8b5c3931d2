import type { Kysely, Selectable } from 'kysely';
import type { PageRequest } from '../domain/pagination.js';
import type { TokenKind } from '../domain/scope.js';
import type { TokenRecord, TokenStore } from '../domain/tokens.js';
import type { Schema, TokensTable } from './schema.js';
import { pageOf, toIso, toMs } from './sql.js';

export class SqlTokenStore implements TokenStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insert(token: TokenRecord): Promise<void> {
    await this.#db
      .insertInto('tokens')
      .values({
        id: token.id,
        account_id: token.accountId,
        kind: token.type,
        name: token.name,
        secret_hash: token.secretHash,
        super_admin: token.superAdmin ? 1 : 0,
        user_id: token.userId,
        expires_at: token.expiresAt === null ? null : toMs(token.expiresAt),
        created_at: toMs(token.createdAt),
        impersonated_by: token.impersonatedBy ?? null,
      })
      .execute();
  }

  async findByHash(secretHash: string) {
    const row = await this.#db
      .selectFrom('tokens')
      .innerJoin('accounts', 'accounts.id', 'tokens.account_id')
      .selectAll('tokens')
      .select('accounts.path as account_path')
      .where('tokens.secret_hash', '=', secretHash)
      .executeTakeFirst();
    return row && { token: toToken(row), accountPath: row.account_path };
  }

  async list(accountId: string, kinds: readonly TokenKind[], request: PageRequest) {
    const base = this.#db.selectFrom('tokens').where('account_id', '=', accountId).where('kind', 'in', kinds);
    return pageOf(base, (q) => q.selectAll().orderBy('created_at').orderBy('id'), request, toToken);
  }

  async get(accountId: string, id: string): Promise<TokenRecord | undefined> {
    const row = await this.#db.selectFrom('tokens').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toToken(row);
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('tokens').where('id', '=', id).execute();
  }

  async deleteExpired(userId: string, now: number): Promise<void> {
    await this.#db.deleteFrom('tokens').where('user_id', '=', userId).where('expires_at', '<=', now).execute();
  }
}

function toToken(row: Selectable<TokensTable>): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    type: row.kind as TokenKind,
    accountId: row.account_id,
    superAdmin: row.super_admin === 1,
    userId: row.user_id,
    createdAt: toIso(row.created_at),
    expiresAt: row.expires_at === null ? null : toIso(row.expires_at),
    secretHash: row.secret_hash,
    ...(row.impersonated_by === null ? {} : { impersonatedBy: row.impersonated_by }),
  };
}
