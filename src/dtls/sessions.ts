/** What a session keeps for an abbreviated handshake (RFC 5246 7.3, 7.4.1.2): its master secret and parameters. */
export interface SessionTicket {
  readonly id: Buffer;
  readonly master: Buffer;
  readonly suite: number;
  readonly identity?: Buffer | undefined;
  readonly extendedMasterSecret: boolean;
}

/**
 * Sessions that may be resumed, newest last, bounded in number and age: a sleepy device that wakes up
 * (new address, lost state) resumes with one round trip and no key exchange instead of a full handshake.
 */
export class SessionCache {
  readonly #sessions = new Map<string, SessionTicket & { readonly at: number }>();
  readonly #max: number;
  readonly #maxAgeMs: number;

  constructor(options: { max?: number; maxAgeMs?: number } = {}) {
    this.#max = options.max ?? 10_000;
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
    this.#sessions.delete(key);
    this.#sessions.set(key, { ...session, at: Date.now() });
    while (this.#sessions.size > this.#max) this.#sessions.delete(this.#sessions.keys().next().value!);
  }

  /** Forgets the sessions of a PSK identity (its key changed or was removed). */
  forgetIdentity(identity: Buffer): void {
    for (const [key, session] of this.#sessions) if (session.identity?.equals(identity)) this.#sessions.delete(key);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
