import type { Kysely, Selectable } from 'kysely';
import type { AccountContents, AccountRecord, AccountStore } from '../domain/accounts.js';
import type { PageRequest } from '../domain/pagination.js';
import type { EndpointReadCache } from './endpoint-read-cache.js';
import { fromJson, toJson, type AccountsTable, type Schema } from './schema.js';
import { pageOf, startsWith, toIso, toMs } from './sql.js';

export class SqlAccountStore implements AccountStore {
  readonly #db: Kysely<Schema>;
  /** Forgets every endpoint after a delete that takes endpoints with it. */
  readonly #endpointCache: EndpointReadCache | undefined;

  constructor(db: Kysely<Schema>, endpointCache?: EndpointReadCache) {
    this.#db = db;
    this.#endpointCache = endpointCache;
  }

  async insert(account: AccountRecord): Promise<void> {
    await this.#db
      .insertInto('accounts')
      .values({
        id: account.accountId,
        name: account.name,
        parent_id: account.parentId,
        path: account.path,
        external_refs: toJson(account.externalRefs),
        created_at: toMs(account.createdAt),
        updated_at: toMs(account.updatedAt),
      })
      .execute();
  }

  async get(accountId: string): Promise<AccountRecord | undefined> {
    const row = await this.#db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
    return row && toAccount(row);
  }

  async findRoot(): Promise<AccountRecord | undefined> {
    const row = await this.#db.selectFrom('accounts').selectAll().where('parent_id', 'is', null).orderBy('created_at').executeTakeFirst();
    return row && toAccount(row);
  }

  async list(filter: { parentId: string } | { descendantsOf: string }, request: PageRequest) {
    const base = this.#db
      .selectFrom('accounts')
      .$if('parentId' in filter, (q) => q.where('parent_id', '=', (filter as { parentId: string }).parentId))
      .$if('descendantsOf' in filter, (q) => {
        const path = (filter as { descendantsOf: string }).descendantsOf;
        return q.where(startsWith('path', path)).where('path', '!=', path);
      });
    return pageOf(base, (q) => q.selectAll().orderBy('name').orderBy('id'), request, toAccount);
  }

  async update(accountId: string, changes: { name?: string; externalRefs?: Record<string, string>; updatedAt: string }): Promise<void> {
    await this.#db
      .updateTable('accounts')
      .set({
        ...(changes.name === undefined ? {} : { name: changes.name }),
        ...(changes.externalRefs === undefined ? {} : { external_refs: toJson(changes.externalRefs) }),
        updated_at: toMs(changes.updatedAt),
      })
      .where('id', '=', accountId)
      .execute();
  }

  async contents(accountId: string): Promise<AccountContents> {
    const count = async (table: 'accounts' | 'services' | 'endpoints' | 'users', column: 'parent_id' | 'account_id') => {
      const row = await this.#db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .where(column, '=', accountId)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    const [subAccounts, services, endpoints, users] = await Promise.all([
      count('accounts', 'parent_id'),
      count('services', 'account_id'),
      count('endpoints', 'account_id'),
      count('users', 'account_id'),
    ]);
    return { subAccounts, services, endpoints, users };
  }

  async deleteTree(path: string): Promise<void> {
    try {
      await this.#deleteTree(path);
    } finally {
      this.#endpointCache?.forgetAll();
    }
  }

  async #deleteTree(path: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      const ids = trx.selectFrom('accounts').select('id').where(startsWith('path', path));
      // Children before parents: tags and storage go with their endpoints (ON DELETE CASCADE).
      await trx.deleteFrom('endpoints').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('services').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('tokens').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('users').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('executions').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('triggers').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('script_queues').where('account_id', 'in', ids).execute();
      await trx.deleteFrom('events').where('account_id', 'in', ids).execute();
      // Deepest accounts first, so no row ever points at a deleted parent.
      const accounts = await trx.selectFrom('accounts').select(['id', 'path']).where(startsWith('path', path)).execute();
      accounts.sort((a, b) => b.path.length - a.path.length);
      for (const account of accounts) await trx.deleteFrom('accounts').where('id', '=', account.id).execute();
    });
  }
}

function toAccount(row: Selectable<AccountsTable>): AccountRecord {
  return {
    accountId: row.id,
    name: row.name,
    parentId: row.parent_id,
    externalRefs: fromJson<Record<string, string>>(row.external_refs),
    path: row.path,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
