/**
 * Message-ID de-duplication (RFC 7252 4.5): what was received from which peer under which message ID, and
 * what we answered, for EXCHANGE_LIFETIME (CON) or NON_LIFETIME (NON). Each peer's entries sit in a small
 * map keyed by message ID (integer keys hash cheaply); one ring of fixed capacity orders all entries by
 * arrival and bounds them: the oldest leaves when the ring is full or when it expires. Under a flood that
 * evicts entries early, a late duplicate is processed again: the same as having no de-duplication, never worse.
 */
export interface SeenMessage {
  readonly expires: number;
  /** What we answered a CON with (piggy-backed response, empty ACK, RST), sent again for a duplicate. */
  reply: Buffer | undefined;
  /** Called for a duplicate CON while its request is still being handled (no reply yet). */
  onDuplicate: (() => void) | undefined;
}

/** The per-peer part: message ID → entry. Lives in the peer's state. */
export type SeenByMessageId = Map<number, SeenEntry>;

interface SeenEntry extends SeenMessage {
  readonly owner: SeenByMessageId;
  readonly messageId: number;
}

export class MessageIdCache {
  readonly #ring: (SeenEntry | undefined)[];
  #next = 0;
  #size = 0;

  constructor(capacity: number) {
    this.#ring = new Array<SeenEntry | undefined>(Math.max(1, capacity)).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  /** The live entry for this message ID in the peer's map, if any. */
  get(owner: SeenByMessageId, messageId: number, now: number): SeenMessage | undefined {
    const entry = owner.get(messageId);
    if (entry === undefined) return undefined;
    if (entry.expires <= now) {
      owner.delete(messageId);
      return undefined;
    }
    return entry;
  }

  add(owner: SeenByMessageId, messageId: number, expires: number): SeenMessage {
    const slot = this.#next;
    const old = this.#ring[slot];
    if (old !== undefined) this.#forget(old);
    else this.#size++;
    const entry: SeenEntry = { owner, messageId, expires, reply: undefined, onDuplicate: undefined };
    this.#ring[slot] = entry;
    owner.set(messageId, entry);
    this.#next = slot + 1 === this.#ring.length ? 0 : slot + 1;
    return entry;
  }

  /** Drops expired entries from the oldest end (NON entries behind a longer-lived CON wait for it; harmless). */
  sweep(now: number): void {
    const capacity = this.#ring.length;
    let slot = (this.#next - this.#size + capacity) % capacity;
    while (this.#size > 0) {
      const entry = this.#ring[slot];
      if (entry !== undefined && entry.expires > now) return;
      if (entry !== undefined) this.#forget(entry);
      this.#ring[slot] = undefined;
      this.#size--;
      slot = slot + 1 === capacity ? 0 : slot + 1;
    }
  }

  clear(): void {
    for (const entry of this.#ring) if (entry !== undefined) this.#forget(entry);
    this.#ring.fill(undefined);
    this.#next = 0;
    this.#size = 0;
  }

  #forget(entry: SeenEntry): void {
    if (entry.owner.get(entry.messageId) === entry) entry.owner.delete(entry.messageId);
  }
}
