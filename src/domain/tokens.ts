import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';
import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import { hashTokenSecret, newTokenSecret } from './secrets.js';
import type { Principal, Scope, TokenKind } from './scope.js';

/** A token as listed: never its secret. */
export interface TokenInfo {
  readonly id: string;
  readonly name: string;
  readonly type: TokenKind;
  readonly accountId: string;
  readonly superAdmin: boolean;
  readonly userId: string | null;
  readonly createdAt: string;
  readonly expiresAt: string | null;
  /** Who issued this support token (`POST /super/impersonate`); absent on every other token. */
  readonly impersonatedBy?: string | undefined;
}

/** What `create` returns, the only time the secret is shown. */
export interface IssuedToken extends TokenInfo {
  readonly token: string;
}

export interface TokenRecord extends TokenInfo {
  readonly secretHash: string;
}

export interface TokenStore {
  insert(token: TokenRecord): Promise<void>;
  /** The token with its account's path, or undefined. */
  findByHash(secretHash: string): Promise<{ token: TokenRecord; accountPath: string } | undefined>;
  list(accountId: string, kinds: readonly TokenKind[], page: PageRequest): Promise<Page<TokenRecord>>;
  get(accountId: string, id: string): Promise<TokenRecord | undefined>;
  delete(id: string): Promise<void>;
  deleteExpired(userId: string, now: number): Promise<void>;
}

export interface TokenInput {
  readonly name: string;
  readonly type?: 'api' | 'app' | undefined;
  readonly superAdmin?: boolean | undefined;
  /** Lifetime in seconds; tokens without one never expire. */
  readonly expiresIn?: number | undefined;
}

export interface TokensOptions {
  /** How long a verified token is trusted before it is looked up again (ms); revocation on another node takes at most this long. */
  readonly cacheTtlMs: number;
}

const expired = (principal: Principal, now: number): boolean => principal.expiresAt !== null && principal.expiresAt <= now;

/**
 * API tokens (`AT:`), app tokens (`AT:`, issued for another account's cross-account calls) and user tokens (`UT:`).
 * Secrets are stored as hashes; verified tokens are cached so a request costs one hash and one map look-up.
 */
export class Tokens {
  readonly #store: TokenStore;
  readonly #cache: LRUCache<string, Principal>;
  readonly #revokeListeners: ((tokenId: string | undefined) => void)[] = [];

  constructor(store: TokenStore, options: TokensOptions) {
    this.#store = store;
    this.#cache = lruCache(50_000, { ttl: Math.max(options.cacheTtlMs, 1) });
  }

  /**
   * The principal of a token verified within the cache's lifetime and not expired, without waiting (most API
   * requests); undefined when it has to be looked up: then {@link authenticate}.
   */
  recall(token: string): Principal | undefined {
    const principal = this.#cache.get(hashTokenSecret(token));
    return principal && !expired(principal, Date.now()) ? principal : undefined;
  }

  /** The principal a bearer token (without any `:<accountId>` suffix) stands for. 401 when unknown, expired or revoked. */
  async authenticate(token: string): Promise<Principal> {
    const secretHash = hashTokenSecret(token);
    const now = Date.now();
    let principal = this.#cache.get(secretHash);
    if (!principal) {
      const found = await this.#store.findByHash(secretHash);
      if (!found) throw new AppError('IOTB_AUTH_TOKEN_INVALID');
      principal = toPrincipal(found.token, found.accountPath);
      this.#cache.set(secretHash, principal);
    }
    if (expired(principal, now)) {
      this.#cache.delete(secretHash);
      throw new AppError('IOTB_AUTH_TOKEN_INVALID', 'The token has expired');
    }
    return principal;
  }

  /** Issues an API or app token for the acting account. */
  async create(scope: Scope, input: TokenInput): Promise<IssuedToken> {
    const { principal } = scope;
    if (principal.kind === 'app') throw new AppError('IOTB_AUTH_FORBIDDEN', 'An app token cannot issue tokens');
    const superAdmin = input.superAdmin ?? false;
    if (superAdmin && !(principal.superAdmin && isRootPath(scope.accountPath))) {
      throw new AppError('IOTB_AUTH_FORBIDDEN', 'Only a Super-Admin acting in the root account can issue Super-Admin tokens');
    }
    return this.#issue({
      accountId: scope.accountId,
      kind: input.type ?? 'api',
      name: input.name,
      superAdmin,
      userId: null,
      expiresAt: input.expiresIn === undefined ? null : Date.now() + input.expiresIn * 1000,
    });
  }

  /** A user token for a user who has just proven their password. */
  async createForUser(user: { id: string; accountId: string; superAdmin: boolean }, ttlSeconds: number): Promise<IssuedToken> {
    const now = Date.now();
    await this.#store.deleteExpired(user.id, now);
    return this.#issue({
      accountId: user.accountId,
      kind: 'user',
      name: 'login',
      superAdmin: user.superAdmin,
      userId: user.id,
      expiresAt: now + ttlSeconds * 1000,
    });
  }

  /** Makes sure `token` is a Super-Admin API token of the root account (used for `IOTBRIDGE_ADMIN_TOKEN`). */
  async ensure(token: string, rootAccountId: string, name: string): Promise<boolean> {
    if (await this.#store.findByHash(hashTokenSecret(token))) return false;
    await this.#store.insert({
      ...tokenFields({ accountId: rootAccountId, kind: 'api', name, superAdmin: true, userId: null, expiresAt: null }),
      secretHash: hashTokenSecret(token),
    });
    return true;
  }

  /**
   * A support token acting in `accountId` for a Super-Admin (never a Super-Admin token itself): a user token when
   * `userId` is given, else an API token; it expires after `ttlSeconds` and carries who issued it.
   */
  impersonation(target: { accountId: string; userId: string | null }, issuedBy: string, ttlSeconds: number): Promise<IssuedToken> {
    return this.#issue({
      accountId: target.accountId,
      kind: target.userId === null ? 'api' : 'user',
      name: `support access by ${issuedBy}`,
      superAdmin: false,
      userId: target.userId,
      expiresAt: Date.now() + ttlSeconds * 1000,
      impersonatedBy: issuedBy,
    });
  }

  /** Issues a Super-Admin API token of the root account (first start, `iotbridge token create`). */
  issueRootToken(rootAccountId: string, name: string): Promise<IssuedToken> {
    return this.#issue({ accountId: rootAccountId, kind: 'api', name, superAdmin: true, userId: null, expiresAt: null });
  }

  async list(scope: Scope, kinds: readonly TokenKind[], page: PageRequest): Promise<Page<TokenInfo>> {
    const result = await this.#store.list(scope.accountId, kinds, page);
    return { ...result, items: result.items.map(publicToken) };
  }

  async get(scope: Scope, id: string): Promise<TokenInfo> {
    const token = await this.#store.get(scope.accountId, id);
    if (!token) throw new AppError('IOTB_TOKEN_NOT_FOUND');
    return publicToken(token);
  }

  /** Revokes a token of the acting account; it stops working at once on this node. */
  async revoke(scope: Scope, id: string): Promise<void> {
    if (scope.principal.kind === 'app') throw new AppError('IOTB_AUTH_FORBIDDEN', 'An app token cannot revoke tokens');
    const token = await this.#store.get(scope.accountId, id);
    if (!token) throw new AppError('IOTB_TOKEN_NOT_FOUND');
    await this.#store.delete(id);
    this.#cache.delete(token.secretHash);
    this.#revoked(id);
  }

  /** Revokes the token a principal came with (logout). */
  async revokePrincipal(principal: Principal): Promise<void> {
    await this.#store.delete(principal.tokenId);
    this.forgetCached(principal.tokenId);
    this.#revoked(principal.tokenId);
  }

  /** Drops every cached principal (after bulk deletes such as an account tree). */
  forgetAll(): void {
    this.#cache.clear();
    this.#revoked(undefined);
  }

  /**
   * Drops the cached principal of a token, or every one, without telling anybody: another node of a cluster
   * revoked it (docs/cluster.md).
   */
  forgetCached(tokenId?: string): void {
    if (tokenId === undefined) this.#cache.clear();
    else for (const [hash, cached] of this.#cache.entries()) if (cached.tokenId === tokenId) this.#cache.delete(hash);
  }

  /** `listener` hears of tokens revoked here (undefined: any might be), for the other nodes' caches. */
  onRevoke(listener: (tokenId: string | undefined) => void): void {
    this.#revokeListeners.push(listener);
  }

  #revoked(tokenId: string | undefined): void {
    for (const listener of this.#revokeListeners) listener(tokenId);
  }

  async #issue(fields: Parameters<typeof tokenFields>[0]): Promise<IssuedToken> {
    const token = newTokenSecret(fields.kind === 'user' ? 'UT:' : 'AT:');
    const record: TokenRecord = { ...tokenFields(fields), secretHash: hashTokenSecret(token) };
    await this.#store.insert(record);
    return { ...publicToken(record), token };
  }
}

function tokenFields(fields: {
  accountId: string;
  kind: TokenKind;
  name: string;
  superAdmin: boolean;
  userId: string | null;
  expiresAt: number | null;
  impersonatedBy?: string | undefined;
}): TokenInfo {
  return {
    ...(fields.impersonatedBy === undefined ? {} : { impersonatedBy: fields.impersonatedBy }),
    id: newId(),
    name: fields.name,
    type: fields.kind,
    accountId: fields.accountId,
    superAdmin: fields.superAdmin,
    userId: fields.userId,
    createdAt: new Date().toISOString(),
    expiresAt: fields.expiresAt === null ? null : new Date(fields.expiresAt).toISOString(),
  };
}

function toPrincipal(token: TokenRecord, accountPath: string): Principal {
  return {
    tokenId: token.id,
    kind: token.type,
    accountId: token.accountId,
    accountPath,
    // Defence in depth: the flag means nothing outside the root account.
    superAdmin: token.superAdmin && isRootPath(accountPath),
    userId: token.userId,
    expiresAt: token.expiresAt === null ? null : Date.parse(token.expiresAt),
    ...(token.impersonatedBy === undefined ? {} : { impersonatedBy: token.impersonatedBy }),
  };
}

function publicToken(token: TokenRecord): TokenInfo {
  const { secretHash: _secretHash, ...info } = token;
  return info;
}

export function isRootPath(accountPath: string): boolean {
  return accountPath.split('/').length === 3;
}
