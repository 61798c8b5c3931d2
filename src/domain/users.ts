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
  /** Throws `IOTB_USER_EMAIL_TAKEN` when the email is in use. */
  insert(user: UserRecord): Promise<void>;
  findByEmail(email: string): Promise<UserRecord | undefined>;
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

  /** Creates the first user of the root account from configuration, unless that email exists. */
  async ensure(rootAccountId: string, email: string, password: string): Promise<boolean> {
    if (await this.#store.findByEmail(normaliseEmail(email))) return false;
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
    this.#tokens.forgetCached();
  }

  /**
   * Checks the password and issues a user token. The same 401 for an unknown email and a wrong password; 429
   * (without a check) after too many failures for the email from `address`, or from `address` at all.
   */
  async login(email: string, password: string, address: string): Promise<IssuedToken> {
    const normalised = normaliseEmail(email);
    const retryAfterMs = this.#throttle.retryAfter(address, normalised);
    if (retryAfterMs > 0) throw new AppError('IOTB_AUTH_LOGIN_THROTTLED', undefined, { retryAfterSeconds: Math.ceil(retryAfterMs / 1000) });
    const user = await this.#store.findByEmail(normalised);
    const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    if (!user || !valid) {
      this.#throttle.failed(address, normalised);
      throw new AppError('IOTB_AUTH_LOGIN_FAILED');
    }
    this.#throttle.succeeded(address, normalised);
    return this.#tokens.createForUser(user, this.#tokenTtlSeconds);
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
