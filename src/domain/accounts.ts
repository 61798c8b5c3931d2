import { lruCache } from '../lru.js';
import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import { isWithin, type Principal, type Scope } from './scope.js';

export interface Account {
  readonly accountId: string;
  readonly name: string;
  readonly parentId: string | null;
  /** References to this account in other systems (CRM, billing, …): name → id. */
  readonly externalRefs: Record<string, string>;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** An account with its materialised path, as stored. */
export interface AccountRecord extends Account {
  readonly path: string;
}

export interface AccountContents {
  readonly subAccounts: number;
  readonly services: number;
  readonly endpoints: number;
  readonly users: number;
}

export interface AccountStore {
  insert(account: AccountRecord): Promise<void>;
  get(accountId: string): Promise<AccountRecord | undefined>;
  findRoot(): Promise<AccountRecord | undefined>;
  /** Direct children of `parentId`, or every descendant of `path` when `descendantsOf` is given. */
  list(filter: { parentId: string } | { descendantsOf: string }, page: PageRequest): Promise<Page<AccountRecord>>;
  update(accountId: string, changes: { name?: string; externalRefs?: Record<string, string>; updatedAt: string }): Promise<void>;
  contents(accountId: string): Promise<AccountContents>;
  /** Deletes the account at `path`, every descendant and everything they own. */
  deleteTree(path: string): Promise<void>;
}

export interface AccountInput {
  readonly name: string;
  readonly parentId?: string | undefined;
  readonly externalRefs?: Record<string, string> | undefined;
}

/** The account tree and the one place that decides which account a call may act in. */
export class Accounts {
  readonly #store: AccountStore;
  /** Account paths never change while an account exists, so they can be cached; deletes evict. */
  readonly #paths = lruCache<string, string>(10_000);

  constructor(store: AccountStore) {
    this.#store = store;
  }

  /**
   * The scope for `principal` acting in `accountId` (its own account when omitted).
   * A token reaches its own account and every descendant, never a sibling or an ancestor;
   * app tokens reach only the account that issued them.
   */
  async scopeFor(principal: Principal, accountId?: string): Promise<Scope> {
    if (accountId === undefined || accountId === principal.accountId) return this.ownScope(principal);
    if (principal.kind === 'app') {
      throw new AppError('IOTB_AUTH_ACCOUNT_FORBIDDEN', 'An app token acts only in the account that issued it');
    }
    const path = await this.#pathOf(accountId);
    if (path === undefined || !isWithin(path, principal.accountPath)) {
      // Same answer whether the account exists or not: a token learns nothing about accounts it can't reach.
      throw new AppError('IOTB_AUTH_ACCOUNT_FORBIDDEN');
    }
    return { accountId, accountPath: path, principal };
  }

  /** The principal acting in its own account (what {@link scopeFor} answers without an account id). */
  ownScope(principal: Principal): Scope {
    return { accountId: principal.accountId, accountPath: principal.accountPath, principal };
  }

  /**
   * The scope a platform component acts in for an account (a trigger's script): the account itself, no
   * Super-Admin, and `actor` as the principal's id so what it does can be traced.
   */
  async platformScope(accountId: string, actor: string): Promise<Scope> {
    const accountPath = await this.#pathOf(accountId);
    if (accountPath === undefined) throw new AppError('IOTB_ACCOUNT_NOT_FOUND');
    const principal: Principal = { tokenId: actor, kind: 'api', accountId, accountPath, superAdmin: false, userId: null, expiresAt: null };
    return { accountId, accountPath, principal };
  }

  /** The root account, created (with `name`) when the database is new. */
  async ensureRoot(name = 'root'): Promise<{ account: AccountRecord; created: boolean }> {
    const existing = await this.#store.findRoot();
    if (existing) return { account: existing, created: false };
    const id = newId();
    const now = new Date().toISOString();
    const account: AccountRecord = {
      accountId: id,
      name,
      parentId: null,
      externalRefs: {},
      path: `/${id}/`,
      createdAt: now,
      updatedAt: now,
    };
    await this.#store.insert(account);
    return { account, created: true };
  }

  /** Creates a sub-account of the acting account (or of `parentId`, which must be within reach). */
  async create(scope: Scope, input: AccountInput): Promise<Account> {
    const parent = await this.#reachable(scope, input.parentId ?? scope.accountId);
    const id = newId();
    const now = new Date().toISOString();
    const account: AccountRecord = {
      accountId: id,
      name: input.name,
      parentId: parent.accountId,
      externalRefs: input.externalRefs ?? {},
      path: `${parent.path}${id}/`,
      createdAt: now,
      updatedAt: now,
    };
    await this.#store.insert(account);
    return publicAccount(account);
  }

  /** Sub-accounts of the acting account: direct children, or all descendants. */
  async list(scope: Scope, options: { descendants: boolean }, page: PageRequest): Promise<Page<Account>> {
    const filter = options.descendants ? { descendantsOf: scope.accountPath } : { parentId: scope.accountId };
    const result = await this.#store.list(filter, page);
    return { ...result, items: result.items.map(publicAccount) };
  }

  async get(scope: Scope, accountId: string): Promise<Account> {
    return publicAccount(await this.#reachable(scope, accountId));
  }

  async update(scope: Scope, accountId: string, changes: { name?: string; externalRefs?: Record<string, string> }): Promise<Account> {
    const current = await this.#reachable(scope, accountId);
    const updatedAt = new Date().toISOString();
    await this.#store.update(accountId, { ...changes, updatedAt });
    return publicAccount({ ...current, ...changes, updatedAt });
  }

  /**
   * Deletes a sub-account. Refuses (409) while it owns anything, unless `cascade`, which deletes the
   * whole subtree with its services, endpoints, users and tokens. An account can't delete itself or an ancestor.
   */
  async delete(scope: Scope, accountId: string, options: { cascade: boolean }): Promise<void> {
    const account = await this.#reachable(scope, accountId);
    if (account.path === scope.accountPath || isWithin(scope.principal.accountPath, account.path)) {
      throw new AppError('IOTB_AUTH_FORBIDDEN', 'An account cannot delete itself or an account above it');
    }
    if (!options.cascade) {
      const contents = await this.#store.contents(accountId);
      if (Object.values(contents).some((count) => count > 0)) {
        throw new AppError('IOTB_ACCOUNT_NOT_EMPTY', 'The account still owns data; delete it first or pass ?cascade=true', contents);
      }
    }
    await this.#store.deleteTree(account.path);
    for (const [id, path] of this.#paths.entries()) if (isWithin(path, account.path)) this.#paths.delete(id);
  }

  async #reachable(scope: Scope, accountId: string): Promise<AccountRecord> {
    const account = await this.#store.get(accountId);
    if (!account || !isWithin(account.path, scope.accountPath)) throw new AppError('IOTB_ACCOUNT_NOT_FOUND');
    return account;
  }

  async #pathOf(accountId: string): Promise<string | undefined> {
    const cached = this.#paths.get(accountId);
    if (cached !== undefined) return cached;
    const account = await this.#store.get(accountId);
    if (account) this.#paths.set(accountId, account.path);
    return account?.path;
  }
}

function publicAccount(account: AccountRecord): Account {
  const { path: _path, ...rest } = account;
  return rest;
}
