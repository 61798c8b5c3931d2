/** Who is calling: what an authenticated token (API, app or user token) stands for. */
export interface Principal {
  readonly tokenId: string;
  readonly kind: TokenKind;
  /** The account that issued the token. */
  readonly accountId: string;
  readonly accountPath: string;
  /** Platform administrator: only ever set on tokens and users of the root account. */
  readonly superAdmin: boolean;
  readonly userId: string | null;
  /** Epoch ms, or null for tokens that do not expire. */
  readonly expiresAt: number | null;
  /** A support token a Super-Admin issued (`POST /super/impersonate`): who issued it. Absent otherwise. */
  readonly impersonatedBy?: string | undefined;
}

export type TokenKind = 'api' | 'app' | 'user';

/**
 * The account a call acts in, and who acts. Every domain call takes one; it is built only by
 * `Accounts.scopeFor`, which checks the principal may reach the account (its own or a descendant).
 */
export interface Scope {
  readonly accountId: string;
  readonly accountPath: string;
  readonly principal: Principal;
}

/** True when `path` is the account at `ancestorPath` or one of its descendants. */
export function isWithin(path: string, ancestorPath: string): boolean {
  return path.startsWith(ancestorPath);
}
