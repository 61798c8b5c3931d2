import type { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';

/** What a session keeps for an abbreviated handshake (RFC 5246 7.3, 7.4.1.2): its master secret and parameters. */
export interface SessionTicket {
  readonly id: Buffer;
  readonly master: Buffer;
  readonly suite: number;
  readonly identity?: Buffer | undefined;
  readonly extendedMasterSecret: boolean;
}

/**
 * Sessions that may be resumed, bounded in number (the least recently used goes first) and age: a sleepy device that wakes up
 * (new address, lost state) resumes with one round trip and no key exchange instead of a full handshake.
 */
export class SessionCache {
  readonly #sessions: LRUCache<string, SessionTicket & { readonly at: number }>;
  readonly #maxAgeMs: number;

  constructor(options: { max?: number; maxAgeMs?: number } = {}) {
    this.#sessions = lruCache(options.max ?? 10_000);
    this.#maxAgeMs = options.maxAgeMs ?? 24 * 3_600_000;
  }

  get(id: Buffer): SessionTicket | undefined {
    const key = id.toString('hex');
    const session = this.#sessions.get(key);
    if (!session) return undefined;
    if (Date.now() - session.at > this.#maxAgeMs) {
      this.#sessions.delete(key);
      return undefined;
    }
    return session;
  }

  put(session: SessionTicket): void {
    const key = session.id.toString('hex');
    // Full: the least recently used goes, in constant time (a Map evicting its first key turns quadratic: src/coap/fifo-map.ts).
    this.#sessions.set(key, { ...session, at: Date.now() });
  }

  /** Forgets the sessions of a PSK identity (its key changed or was removed). */
  forgetIdentity(identity: Buffer): void {
    const gone = [...this.#sessions.entries()].filter(([, session]) => session.identity?.equals(identity)).map(([key]) => key);
    for (const key of gone) this.#sessions.delete(key);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
