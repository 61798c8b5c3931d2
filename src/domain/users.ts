import { randomBytes } from 'node:crypto';
import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import type { Principal, Scope } from './scope.js';
import { LoginThrottle } from './login-throttle.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from './secrets.js';
import { isRootPath, type IssuedToken, type Tokens } from './tokens.js';

export interface User {
  readonly id: string;
  readonly accountId: string;
  readonly email: string;
  readonly name: string;
  readonly superAdmin: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface UserRecord extends User {
  readonly passwordHash: string;
}

export interface UserStore {
  /** Throws `IOTB_USER_EMAIL_TAKEN` when the email is in use in the user's account. */
  insert(user: UserRecord): Promise<void>;
  /** The account's user with this (normalised) email. */
  findByEmail(accountId: string, email: string): Promise<UserRecord | undefined>;
  /** Users of every account with this (normalised) email, oldest first (created, then id), at most `limit`. */
  listByEmail(email: string, limit: number): Promise<UserRecord[]>;
  get(accountId: string, id: string): Promise<UserRecord | undefined>;
  list(accountId: string, page: PageRequest): Promise<Page<UserRecord>>;
  update(id: string, changes: { name?: string; passwordHash?: string; updatedAt: string }): Promise<void>;
  /** Deletes the user and every token issued to them. */
  delete(id: string): Promise<void>;
}

export interface UserInput {
  readonly email: string;
  readonly password: string;
  readonly name?: string | undefined;
  readonly superAdmin?: boolean | undefined;
}

export const PASSWORD_MIN_LENGTH = 8;

/**
 * A sign-in without `accountId` checks the password against at most this many users with the email (the
 * oldest first): each check is one scrypt. Users past them sign in with `accountId`.
 */
export const LOGIN_CANDIDATES_MAX = 10;

/** People who sign in with email and password and get a `UT:` user token. */
export class Users {
  readonly #store: UserStore;
  readonly #tokens: Tokens;
  readonly #tokenTtlSeconds: number;
  readonly #throttle = new LoginThrottle();

  constructor(store: UserStore, tokens: Tokens, options: { tokenTtlSeconds: number }) {
    this.#store = store;
    this.#tokens = tokens;
    this.#tokenTtlSeconds = options.tokenTtlSeconds;
  }

  async create(scope: Scope, input: UserInput): Promise<User> {
    if (scope.principal.kind === 'app') throw new AppError('IOTB_AUTH_FORBIDDEN', 'An app token cannot manage users');
    const superAdmin = input.superAdmin ?? false;
    if (superAdmin && !(scope.principal.superAdmin && isRootPath(scope.accountPath))) {
      throw new AppError('IOTB_AUTH_FORBIDDEN', 'Only a Super-Admin acting in the root account can create Super-Admin users');
    }
    return this.#insert(scope.accountId, { ...input, superAdmin });
  }

  /**
   * Creates the first user of the root account from configuration, unless the root account has a user with
   * that email. Other accounts' users are not looked at: a tenant's user with the same email neither
   * stops nor becomes the Super-Admin.
   */
  async ensure(rootAccountId: string, email: string, password: string): Promise<boolean> {
    if (await this.#store.findByEmail(rootAccountId, normaliseEmail(email))) return false;
    await this.#insert(rootAccountId, { email, password, name: 'Administrator', superAdmin: true });
    return true;
  }

  async list(scope: Scope, page: PageRequest): Promise<Page<User>> {
    const result = await this.#store.list(scope.accountId, page);
    return { ...result, items: result.items.map(publicUser) };
  }

  async get(scope: Scope, id: string): Promise<User> {
    return publicUser(await this.#find(scope, id));
  }

  async update(scope: Scope, id: string, changes: { name?: string | undefined; password?: string | undefined }): Promise<User> {
    if (scope.principal.kind === 'app') throw new AppError('IOTB_AUTH_FORBIDDEN', 'An app token cannot manage users');
    const user = await this.#find(scope, id);
    const updatedAt = new Date().toISOString();
    await this.#store.update(id, {
      ...(changes.name === undefined ? {} : { name: changes.name }),
      ...(changes.password === undefined ? {} : { passwordHash: await hashPassword(checkedPassword(changes.password)) }),
      updatedAt,
    });
    return publicUser({ ...user, ...(changes.name === undefined ? {} : { name: changes.name }), updatedAt });
  }

  async delete(scope: Scope, id: string): Promise<void> {
    if (scope.principal.kind === 'app') throw new AppError('IOTB_AUTH_FORBIDDEN', 'An app token cannot manage users');
    await this.#find(scope, id);
    await this.#store.delete(id);
    this.#tokens.forgetAll();
  }

  /**
   * Checks the password and issues a user token. An email is unique per account only: with `accountId`, that
   * account's user alone is checked; without, the users with the email in any account, oldest first (at most
   * {@link LOGIN_CANDIDATES_MAX}), and the first whose password matches signs in.
   *
   * The same 401 for an unknown email, an unknown or unrelated account and a wrong password; when no user is
   * checked, one check against a dummy hash takes its place, so an unknown email costs what a known one does.
   * A wrong password costs one check per user with the email (that many scrypts are needed to know that none
   * matches), so its time still grows with how many accounts use the email, up to the cap; with `accountId` it
   * is one check. 429 (without a check) after too many failures for the email from `address`, or from
   * `address` at all: the email is the throttle's key with or without `accountId`, so naming accounts does not
   * buy more guesses.
   */
  async login(email: string, password: string, address: string, accountId?: string): Promise<IssuedToken> {
    const normalised = normaliseEmail(email);
    const retryAfterMs = this.#throttle.retryAfter(address, normalised);
    if (retryAfterMs > 0) throw new AppError('IOTB_AUTH_LOGIN_THROTTLED', undefined, { retryAfterSeconds: Math.ceil(retryAfterMs / 1000) });
    const candidates =
      accountId === undefined
        ? await this.#store.listByEmail(normalised, LOGIN_CANDIDATES_MAX)
        : [await this.#store.findByEmail(accountId, normalised)].filter((user): user is UserRecord => user !== undefined);
    const user = await firstMatching(candidates, password);
    if (!user) {
      this.#throttle.failed(address, normalised);
      throw new AppError('IOTB_AUTH_LOGIN_FAILED');
    }
    this.#throttle.succeeded(address, normalised);
    return this.#tokens.createForUser(user, this.#tokenTtlSeconds);
  }

  /** The account's user with this id or e-mail, for a sign-in that proved who the person is elsewhere (src/oidc/). */
  async findForSignIn(accountId: string, by: { id: string } | { email: string }): Promise<User | undefined> {
    const user = 'id' in by ? await this.#store.get(accountId, by.id) : await this.#store.findByEmail(accountId, normaliseEmail(by.email));
    return user && publicUser(user);
  }

  /**
   * Creates a user an external identity provider vouches for (src/oidc/, which decides the account and checks that
   * Super-Admin is only given in the root account). Its password is random and never shown: password sign-in is
   * impossible until one is set with `PUT /users/{id}`.
   */
  async createExternal(accountId: string, input: { email: string; name?: string | undefined; superAdmin: boolean }): Promise<User> {
    return this.#insert(accountId, { ...input, password: randomBytes(32).toString('base64url') });
  }

  /** A user token for a user an external provider signed in; `superAdmin` is what that sign-in's mapping grants. */
  async issueToken(user: User, superAdmin: boolean): Promise<IssuedToken> {
    return this.#tokens.createForUser({ id: user.id, accountId: user.accountId, superAdmin }, this.#tokenTtlSeconds);
  }

  /** Revokes the user token the call came with. */
  async logout(principal: Principal): Promise<void> {
    if (principal.kind !== 'user') {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'Logout ends a user session (UT: token); revoke API tokens with DELETE /tokens/{id}');
    }
    await this.#tokens.revokePrincipal(principal);
  }

  async #insert(accountId: string, input: UserInput & { superAdmin: boolean }): Promise<User> {
    const now = new Date().toISOString();
    const email = normaliseEmail(input.email);
    const user: UserRecord = {
      id: newId(),
      accountId,
      email,
      name: input.name ?? email,
      superAdmin: input.superAdmin,
      passwordHash: await hashPassword(checkedPassword(input.password)),
      createdAt: now,
      updatedAt: now,
    };
    await this.#store.insert(user);
    return publicUser(user);
  }

  async #find(scope: Scope, id: string): Promise<UserRecord> {
    const user = await this.#store.get(scope.accountId, id);
    if (!user) throw new AppError('IOTB_USER_NOT_FOUND');
    return user;
  }
}

/** The first user (in the order given) whose password this is; with none to check, one dummy check instead. */
async function firstMatching(candidates: readonly UserRecord[], password: string): Promise<UserRecord | undefined> {
  if (candidates.length === 0) {
    await verifyPassword(password, DUMMY_PASSWORD_HASH);
    return undefined;
  }
  for (const candidate of candidates) {
    if (await verifyPassword(password, candidate.passwordHash)) return candidate;
  }
  return undefined;
}

function checkedPassword(password: string): string {
  if (password.length < PASSWORD_MIN_LENGTH) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `A password needs at least ${PASSWORD_MIN_LENGTH} characters`);
  }
  return password;
}

function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

function publicUser(user: UserRecord): User {
  const { passwordHash: _passwordHash, ...rest } = user;
  return rest;
}
