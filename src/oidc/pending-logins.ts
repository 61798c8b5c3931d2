import type { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';

/** What a sign-in started with `GET /auth/oidc/login` needs when the provider sends the person back. */
export interface PendingLogin {
  /** PKCE: the secret whose S256 hash went to the provider as `code_challenge`. */
  readonly codeVerifier: string;
  /** Expected in the ID token: binds it to this sign-in. */
  readonly nonce: string;
  /** The `redirect_uri` of the authorization request; the code exchange must name the same. */
  readonly redirectUri: string;
  /** The account asked for with `?account=` (honoured when the mapping gives the person several). */
  readonly accountId: string | undefined;
  /** The UI path to show after signing in. */
  readonly returnTo: string | undefined;
  /** The random value of the cookie the starting browser got: only that browser can finish the sign-in. */
  readonly browser: string;
  /** Epoch ms. */
  readonly expiresAt: number;
}

/** Sign-ins between the redirect to the provider and its callback, keyed by their `state`. */
export interface PendingLogins {
  put(state: string, login: PendingLogin): Promise<void>;
  /** The sign-in with this state, removed so that it is used once; undefined when unknown, used or expired. */
  take(state: string): Promise<PendingLogin | undefined>;
}

/** How long a person may take at the provider. */
export const PENDING_LOGIN_TTL_MS = 10 * 60_000;
export const PENDING_LOGINS_MAX = 10_000;

/**
 * In this process's memory: a callback must reach the node that started its sign-in (sticky sessions in a
 * cluster). Bounded: past `max`, the oldest pending sign-in is dropped (its person starts again).
 */
export class MemoryPendingLogins implements PendingLogins {
  /**
   * Read only by `take`, which removes what it reads, so the least recently used is the oldest: past `max` it goes
   * in constant time (a Map evicting its first key turns quadratic: src/coap/fifo-map.ts).
   */
  readonly #logins: LRUCache<string, PendingLogin>;
  readonly #clock: () => number;

  constructor(options: { max?: number; clock?: () => number } = {}) {
    this.#logins = lruCache(options.max ?? PENDING_LOGINS_MAX);
    this.#clock = options.clock ?? Date.now;
  }

  async put(state: string, login: PendingLogin): Promise<void> {
    this.#sweep();
    this.#logins.set(state, login);
  }

  async take(state: string): Promise<PendingLogin | undefined> {
    const login = this.#logins.get(state);
    this.#logins.delete(state);
    return login && login.expiresAt > this.#clock() ? login : undefined;
  }

  get size(): number {
    return this.#logins.size;
  }

  /** Drops expired sign-ins from the oldest on, stopping at the first live one (all share one TTL). */
  #sweep(): void {
    const now = this.#clock();
    const expired: string[] = [];
    // Oldest first; peek leaves the order as it is.
    for (const state of this.#logins.rkeys()) {
      if (this.#logins.peek(state)!.expiresAt > now) break;
      expired.push(state);
    }
    for (const state of expired) this.#logins.delete(state);
  }
}
