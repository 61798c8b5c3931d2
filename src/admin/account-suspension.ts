import type { Suspension } from './model.js';

/**
 * Which accounts a Super-Admin suspended, held in memory (loaded at start, changed by suspend/resume) so that
 * every device log-in, device message, trigger run and API call asks with one map look-up. A suspension covers
 * the account itself; its sub-accounts are suspended one by one (each may be another customer).
 */
export class AccountSuspension {
  readonly #suspended = new Map<string, Suspension>();

  isSuspended(accountId: string): boolean {
    return this.#suspended.size > 0 && this.#suspended.has(accountId);
  }

  get(accountId: string): Suspension | null {
    return this.#suspended.get(accountId) ?? null;
  }

  set(accountId: string, suspension: Suspension | null): void {
    if (suspension) this.#suspended.set(accountId, suspension);
    else this.#suspended.delete(accountId);
  }

  /** Account ids, for diagnostics. */
  get accounts(): string[] {
    return [...this.#suspended.keys()];
  }
}
