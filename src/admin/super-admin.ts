import type { Account } from '../domain/accounts.js';
import type { Domain } from '../domain/domain.js';
import type { Scope } from '../domain/scope.js';
import type { IssuedToken } from '../domain/tokens.js';
import { AppError } from '../errors.js';
import type { LogInput } from '../logs/model.js';
import { AccountLimits, type LimitUsage } from './account-limits.js';
import { AccountSuspension } from './account-suspension.js';
import type { AccountLimitValues, AdminStore, EndpointLocation, Suspension } from './model.js';

/** The longest a support token lives, and by default (minutes). */
export const IMPERSONATION_MAX_MINUTES = 60;
export const IMPERSONATION_DEFAULT_MINUTES = 30;

/** An account as the Super-Admin actions show it. */
export interface AccountStatus {
  readonly accountId: string;
  readonly name: string;
  readonly suspended: boolean;
  readonly suspension: Suspension | null;
  readonly limits: AccountLimitValues;
  readonly usage: LimitUsage;
}

/** One `/super/*` call, as audited in the root account's log. */
export interface SuperCall {
  readonly method: string;
  readonly route: string;
  readonly query: Record<string, unknown>;
  readonly status: number;
  /** The account an action was aimed at. */
  readonly targetAccountId?: string | undefined;
}

/**
 * The operator's actions on accounts: suspend and resume, limits, impersonation for support, and the audit of every
 * `/super/*` call. Suspensions and limits are stored (they survive restarts) and held in memory for the hot paths
 * that check them (devices, the trigger engine, the API).
 */
export class SuperAdmin {
  readonly suspension = new AccountSuspension();
  readonly limits: AccountLimits;
  readonly #store: AdminStore;
  readonly #domain: Domain;
  readonly #rootAccountId: string;
  readonly #suspendedListeners: ((accountId: string) => Promise<void>)[] = [];

  /** `limits` may be made first: the endpoint store is wrapped with them before the domain exists. */
  constructor(deps: { store: AdminStore; domain: Domain; rootAccountId: string; limits?: AccountLimits | undefined }) {
    this.#store = deps.store;
    this.#domain = deps.domain;
    this.#rootAccountId = deps.rootAccountId;
    this.limits = deps.limits ?? new AccountLimits();
  }

  /** Reads every stored suspension and limit (at start, before devices and triggers run). */
  async load(): Promise<void> {
    for (const control of await this.#store.controls()) {
      this.suspension.set(control.accountId, control.suspension);
      this.limits.set(control.accountId, control.limits);
    }
  }

  /** Endpoints with this key (or id) in any account: the support desk's first question. */
  findEndpoints(by: { key: string } | { id: string }, limit: number): Promise<EndpointLocation[]> {
    return this.#store.findEndpoints(by, limit);
  }

  async status(scope: Scope, accountId: string): Promise<AccountStatus> {
    return this.#statusOf(await this.#domain.accounts.get(scope, accountId));
  }

  /** `listener` runs after each suspension (the device servers end the account's connections). */
  onSuspended(listener: (accountId: string) => Promise<void>): void {
    this.#suspendedListeners.push(listener);
  }

  /**
   * Suspends an account (not the root account): its devices are refused (those connected are disconnected), its
   * triggers do not run, its tokens only read.
   */
  async suspend(scope: Scope, accountId: string, reason: string): Promise<AccountStatus> {
    const account = await this.#domain.accounts.get(scope, accountId);
    if (account.parentId === null) throw new AppError('IOTB_ACCOUNT_ROOT_PROTECTED');
    const suspension = this.suspension.get(accountId) ?? { at: new Date().toISOString(), reason, by: whoOf(scope) };
    await this.#save(accountId, suspension, this.limits.get(accountId));
    this.suspension.set(accountId, suspension);
    for (const listener of this.#suspendedListeners) await listener(accountId);
    return this.#statusOf(account);
  }

  async resume(scope: Scope, accountId: string): Promise<AccountStatus> {
    const account = await this.#domain.accounts.get(scope, accountId);
    await this.#save(accountId, null, this.limits.get(accountId));
    this.suspension.set(accountId, null);
    return this.#statusOf(account);
  }

  /** Sets the limits given (null clears one; one left out keeps its value). */
  async setLimits(scope: Scope, accountId: string, changes: Partial<AccountLimitValues>): Promise<AccountStatus> {
    const account = await this.#domain.accounts.get(scope, accountId);
    const limits = { ...this.limits.get(accountId), ...definedOf(changes) };
    await this.#save(accountId, this.suspension.get(accountId), limits);
    this.limits.set(accountId, limits);
    return this.#statusOf(account);
  }

  /**
   * A support token acting in `accountId` (as `userId` when given, who must be a user of that account), never a
   * Super-Admin, for at most an hour; the root account's log and the account's own log both record who took it.
   */
  async impersonate(scope: Scope, input: { accountId: string; userId?: string | undefined; minutes?: number | undefined }): Promise<IssuedToken> {
    const account = await this.#domain.accounts.get(scope, input.accountId);
    const target = await this.#domain.accounts.platformScope(account.accountId, 'super-admin');
    if (input.userId !== undefined) await this.#domain.users.get(target, input.userId);
    const minutes = Math.min(input.minutes ?? IMPERSONATION_DEFAULT_MINUTES, IMPERSONATION_MAX_MINUTES);
    const who = await this.#describe(scope);
    const token = await this.#domain.tokens.impersonation({ accountId: account.accountId, userId: input.userId ?? null }, who, minutes * 60);
    this.#domain.logs.write({
      accountId: account.accountId,
      level: 'warn',
      source: 'audit',
      message: `support access by ${who}`,
      data: { impersonatedBy: who, tokenId: token.id, expiresAt: token.expiresAt, ...(input.userId === undefined ? {} : { userId: input.userId }) },
    });
    return token;
  }

  /**
   * Whether the trigger engine runs the account's triggers for an event now: not while it is suspended, nor once its
   * runs used the minute's `scriptCpuMsPerMinute` (its log says so once that minute).
   */
  triggersRun(accountId: string): boolean {
    if (this.suspension.isSuspended(accountId)) return false;
    const decision = this.limits.scriptRun(accountId);
    if (decision === 'skip-first') {
      const budget = this.limits.get(accountId).scriptCpuMsPerMinute;
      this.#domain.logs.write({ accountId, level: 'warn', source: 'script', message: `script time limit reached (${budget} ms per minute): triggers are skipped until the next minute`, data: { scriptCpuMsPerMinute: budget } });
    }
    return decision === 'run';
  }

  /** A trigger run of the account took `durationMs` (the worker's measure of the run). */
  scriptRan(accountId: string, durationMs: number): void {
    this.limits.noteScriptTime(accountId, durationMs);
  }

  isSuspended(accountId: string): boolean {
    return this.suspension.isSuspended(accountId);
  }

  /**
   * Whether a device message of the account becomes an event: not while it is suspended (its devices are refused at
   * log-in; this catches those already connected), nor over its `eventsPerSecond` (dropped and counted).
   */
  admitsDeviceEvent(accountId: string): boolean {
    if (this.suspension.isSuspended(accountId)) return false;
    if (this.limits.admitEvents(accountId)) return true;
    this.limits.noteRefused(accountId, 'device');
    return false;
  }

  /** Writes the audit entry of a `/super/*` call (refused ones too) into the root account's log. */
  audit(scope: Scope | null, call: SuperCall): void {
    const entry: LogInput = {
      accountId: this.#rootAccountId,
      level: call.status >= 400 ? 'warn' : 'info',
      source: 'audit',
      message: `super-admin ${call.method} ${call.route} → ${call.status}`,
      data: {
        status: call.status,
        ...(scope ? { tokenId: scope.principal.tokenId, tokenAccountId: scope.principal.accountId, ...(scope.principal.userId === null ? {} : { userId: scope.principal.userId }) } : {}),
        ...(Object.keys(call.query).length > 0 ? { query: call.query } : {}),
        ...(call.targetAccountId === undefined ? {} : { targetAccountId: call.targetAccountId }),
      },
    };
    this.#domain.logs.write(entry);
  }

  async #save(accountId: string, suspension: Suspension | null, limits: AccountLimitValues): Promise<void> {
    await this.#store.save({ accountId, suspension, limits }, Date.now());
  }

  #statusOf(account: Account): AccountStatus {
    const suspension = this.suspension.get(account.accountId);
    return { accountId: account.accountId, name: account.name, suspended: suspension !== null, suspension, limits: this.limits.get(account.accountId), usage: this.limits.usage(account.accountId) };
  }

  /** The Super-Admin as people read it: a user's e-mail, else the token's id. */
  async #describe(scope: Scope): Promise<string> {
    const { principal } = scope;
    if (principal.userId === null) return `token ${principal.tokenId}`;
    const own = await this.#domain.accounts.platformScope(principal.accountId, 'super-admin');
    const user = await this.#domain.users.get(own, principal.userId).catch(() => undefined);
    return user?.email ?? `user ${principal.userId}`;
  }
}

function whoOf(scope: Scope): string {
  return scope.principal.userId ?? scope.principal.tokenId;
}

function definedOf(changes: Partial<AccountLimitValues>): Partial<AccountLimitValues> {
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
}
