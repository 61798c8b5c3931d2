import { timingSafeEqual } from 'node:crypto';
import { randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import type { Accounts } from '../domain/accounts.js';
import type { IssuedToken } from '../domain/tokens.js';
import type { User, Users } from '../domain/users.js';
import { AppError } from '../errors.js';
import type { IdentityProvider } from './identity-provider.js';
import { DEFAULT_ORGANIZATION_CLAIM, emailOf, emailVerified, MappingError, parseMapping, resolve, type Claims, type MappingDocument, type MappingTarget, type OidcMode, type Refusal } from './mapping.js';
import type { OidcStore } from './model.js';
import { PENDING_LOGIN_TTL_MS, type PendingLogins } from './pending-logins.js';

export interface OidcSignInOptions {
  readonly provider: IdentityProvider;
  readonly store: OidcStore;
  readonly pending: PendingLogins;
  readonly users: Users;
  readonly accounts: Accounts;
  readonly rootAccountId: string;
  /** `IOTBRIDGE_OIDC_MODE`; unset: the mapping's own `mode`. */
  readonly mode: OidcMode | undefined;
  /** The mapping of `IOTBRIDGE_OIDC_MAPPING`, checked at start: it wins over the API's. */
  readonly fileMapping: MappingDocument | undefined;
  /** `IOTBRIDGE_OIDC_REDIRECT_URL`; unset: each request's own callback URL. */
  readonly redirectUrl: string | undefined;
  /** The label of the sign-in button (`IOTBRIDGE_OIDC_NAME`). */
  readonly name: string;
  readonly clock?: (() => number) | undefined;
}

/** What a finished sign-in gives: the user token, who and where, and the UI path to go on to. */
export interface SignedIn {
  readonly token: IssuedToken;
  readonly user: User;
  readonly accountId: string;
  /** True on the person's first sign-in into this account (the user was created now). */
  readonly created: boolean;
  readonly returnTo: string | undefined;
}

export interface MappingView {
  /** `file` (IOTBRIDGE_OIDC_MAPPING, read-only here), `api` (set with PUT), `none`. */
  readonly source: 'file' | 'api' | 'none';
  readonly mapping: MappingDocument | null;
  readonly updatedAt: string | null;
}

/** A UI path: one leading slash (never `//host`), no backslash or white space. */
const RETURN_TO = /^\/(?![/\\])[^\s\\]{0,511}$/;

/**
 * External sign-in (SPEC Authentication 6): the authorization-code flow with PKCE against the operator's
 * provider, then the mapping (e-mail domain or organizations) to an account, the user found or created there,
 * and a `UT:` user token like a password sign-in's.
 */
export class OidcSignIn {
  readonly name: string;
  readonly #options: OidcSignInOptions;
  readonly #clock: () => number;

  constructor(options: OidcSignInOptions) {
    this.#options = options;
    this.name = options.name;
    this.#clock = options.clock ?? Date.now;
  }

  /**
   * Starts a sign-in: the provider's URL to send the browser to. `defaultRedirectUri` is this request's own
   * callback URL; `browser` the value of the cookie that binds the sign-in to the browser that started it.
   */
  async start(input: { accountId?: string | undefined; returnTo?: string | undefined; defaultRedirectUri: string; browser: string }): Promise<URL> {
    if (input.returnTo !== undefined && !RETURN_TO.test(input.returnTo)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'returnTo must be a path of the web UI starting with one "/" (e.g. /endpoints)');
    }
    const redirectUri = this.#options.redirectUrl ?? input.defaultRedirectUri;
    const checks = { state: randomState(), nonce: randomNonce(), codeVerifier: randomPKCECodeVerifier() };
    const url = await this.#options.provider.authorizationUrl(redirectUri, checks);
    await this.#options.pending.put(checks.state, {
      codeVerifier: checks.codeVerifier,
      nonce: checks.nonce,
      redirectUri,
      accountId: input.accountId,
      returnTo: input.returnTo,
      browser: input.browser,
      expiresAt: this.#clock() + PENDING_LOGIN_TTL_MS,
    });
    return url;
  }

  /**
   * Finishes the sign-in the provider sent the browser back from: `query` is the callback's whole query, `browser`
   * the binding cookie it came with. A callback from another browser (a forged link that would sign the victim in
   * as the attacker, or a leaked callback URL) is refused: the code stays unused.
   */
  async finish(query: Readonly<Record<string, string>>, browser: string | undefined): Promise<SignedIn> {
    const state = query.state;
    const login = state === undefined || state === '' ? undefined : await this.#options.pending.take(state);
    if (!login || state === undefined) throw new AppError('IOTB_AUTH_OIDC_STATE');
    if (browser === undefined || !sameText(browser, login.browser)) {
      throw new AppError('IOTB_AUTH_OIDC_STATE', 'This sign-in was started in another browser (or its cookie is gone): start it again here');
    }
    const callback = new URL(login.redirectUri);
    for (const [name, value] of Object.entries(query)) callback.searchParams.set(name, value);
    const mapping = await this.#mapping();
    const claims = await this.#options.provider.signIn(callback, { state, nonce: login.nonce, codeVerifier: login.codeVerifier }, { names: wantedClaims(mapping) });
    const target = await this.#target(mapping, claims, login.accountId);
    const { user, created } = await this.#user(target, claims);
    const superAdmin = target.superAdmin === true && target.accountId === this.#options.rootAccountId;
    const token = await this.#options.users.issueToken(user, superAdmin);
    return { token, user, accountId: target.accountId, created, returnTo: login.returnTo };
  }

  async getMapping(): Promise<MappingView> {
    if (this.#options.fileMapping) return { source: 'file', mapping: this.#options.fileMapping, updatedAt: null };
    const stored = await this.#options.store.readMapping();
    if (!stored) return { source: 'none', mapping: null, updatedAt: null };
    return { source: 'api', mapping: JSON.parse(stored.mapping) as MappingDocument, updatedAt: new Date(stored.updatedAt).toISOString() };
  }

  /** Replaces the API's mapping (Super-Admin; the route checks). Refused while a file provides it. */
  async setMapping(value: unknown, by: string): Promise<MappingView> {
    if (this.#options.fileMapping) throw new AppError('IOTB_AUTH_OIDC_MAPPING_FILE');
    const mapping = this.#parse(value);
    const missing: string[] = [];
    for (const accountId of new Set(Object.values(mapping.domains ?? mapping.organizations ?? {}).map((target) => target.accountId))) {
      if (!(await this.#accountExists(accountId))) missing.push(accountId);
    }
    if (missing.length > 0) throw new AppError('IOTB_REQUEST_VALIDATION', `The mapping names accounts that do not exist: ${missing.join(', ')}`, { accounts: missing });
    const updatedAt = this.#clock();
    await this.#options.store.writeMapping({ mapping: JSON.stringify(mapping), updatedAt, updatedBy: by });
    return { source: 'api', mapping, updatedAt: new Date(updatedAt).toISOString() };
  }

  #parse(value: unknown): MappingDocument {
    try {
      return parseMapping(value, { mode: this.#options.mode, rootAccountId: this.#options.rootAccountId });
    } catch (error) {
      if (error instanceof MappingError) throw new AppError('IOTB_REQUEST_VALIDATION', `Sign-in mapping: ${error.message}`);
      throw error;
    }
  }

  /**
   * The file's mapping, else the API's, read at each sign-in (a change made on one node counts on all) and checked
   * again: one stored before `IOTBRIDGE_OIDC_MODE` was changed to another mode maps nobody.
   */
  async #mapping(): Promise<MappingDocument | undefined> {
    const { mapping, source } = await this.getMapping();
    if (mapping === null || source === 'file') return mapping ?? undefined;
    try {
      return this.#parse(mapping);
    } catch (error) {
      if (error instanceof AppError) throw refusal('no_mapping', `The stored sign-in mapping does not fit this service's configuration: ${error.message}`);
      throw error;
    }
  }

  /** The first mapped account that exists, or the one asked for with `?account=` when it is among them. */
  async #target(mapping: MappingDocument | undefined, claims: Claims, wanted: string | undefined): Promise<MappingTarget> {
    const resolution = resolve(mapping, claims);
    if ('refused' in resolution) throw refusal(resolution.refused, resolution.message);
    const existing: MappingTarget[] = [];
    for (const target of resolution.targets) if (await this.#accountExists(target.accountId)) existing.push(target);
    const chosen = existing.find((target) => target.accountId === wanted) ?? existing[0];
    if (!chosen) throw refusal('account_gone', 'The account your identity maps to does not exist any more: ask the operator to fix the mapping');
    return chosen;
  }

  /**
   * The user this identity signed in as before, else the account's user with its e-mail (only when the provider
   * says the e-mail is verified: an unverified one must not take over someone's user), else a new user.
   */
  async #user(target: MappingTarget, claims: Claims): Promise<{ user: User; created: boolean }> {
    const { store, users, provider } = this.#options;
    const { accountId } = target;
    const subject = String(claims.sub);
    const email = emailOf(claims);
    if (email === undefined) throw refusal('no_email', 'The identity provider sent no e-mail address');
    const link = async (user: User) => store.link({ issuer: provider.issuer, subject, accountId, userId: user.id }, this.#clock());
    for (let attempt = 0; ; attempt++) {
      const linkedId = await store.findUser(provider.issuer, subject, accountId);
      const linked = linkedId === undefined ? undefined : await users.findForSignIn(accountId, { id: linkedId });
      if (linked) {
        await link(linked);
        return { user: linked, created: false };
      }
      const existing = await users.findForSignIn(accountId, { email });
      if (existing) {
        if (!emailVerified(claims)) throw refusal('user_exists_unverified', `A user with ${email} exists in this account, and the identity provider does not say the e-mail is verified`);
        await link(existing);
        return { user: existing, created: false };
      }
      try {
        const name = typeof claims.name === 'string' && claims.name.trim() !== '' ? claims.name.trim().slice(0, 200) : undefined;
        const user = await users.createExternal(accountId, { email, name, superAdmin: target.superAdmin === true && accountId === this.#options.rootAccountId });
        await link(user);
        return { user, created: true };
      } catch (error) {
        // Two first sign-ins at once: the other created the user; find it again.
        if (!(error instanceof AppError && error.code === 'IOTB_USER_EMAIL_TAKEN') || attempt > 0) throw error;
      }
    }
  }

  async #accountExists(accountId: string): Promise<boolean> {
    try {
      await this.#options.accounts.platformScope(accountId, 'oidc');
      return true;
    } catch (error) {
      if (error instanceof AppError && error.code === 'IOTB_ACCOUNT_NOT_FOUND') return false;
      throw error;
    }
  }
}

/** The claims the mapping reads: fetched from UserInfo when the ID token lacks them. */
function wantedClaims(mapping: MappingDocument | undefined): string[] {
  const names = ['email', 'email_verified'];
  if (mapping?.mode === 'organization') names.push(mapping.claim ?? DEFAULT_ORGANIZATION_CLAIM);
  return names;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function refusal(reason: Refusal, message: string): AppError {
  return new AppError('IOTB_AUTH_OIDC_NO_ACCOUNT', message, { reason });
}
