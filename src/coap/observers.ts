/**
 * Server side of Observe (RFC 7641 4.1): the list of observers, one entry per (peer, token), each with its
 * own notification sequence number.
 */
import type { CoapMessage } from './message.js';
import { uriPath, uriQuery } from './options.js';
import { peerKey, type Peer } from './transport.js';

export interface Observer {
  /** Stable id: peer and token. */
  readonly id: string;
  readonly peer: Peer;
  readonly token: Buffer;
  /** The observed resource, `/a/b`, and its query, as the registration named them. */
  readonly path: string;
  readonly query: readonly string[];
  /** When the registration (or its latest renewal) was accepted, epoch ms. */
  readonly registeredAt: number;
}

/** The registry's own view of an observer. */
export interface ObserverEntry extends Observer {
  readonly peerKey: string;
  /** Method and resource, as block-wise state is keyed (see IncomingRequests, ServerResponses). */
  readonly requestKey: string;
  /** Size of the registration datagram: bounds notifications until the peer is verified (RFC 7252 11.3). */
  readonly requestSize: number;
  /** Last Observe value sent (24 bits, RFC 7641 4.4). */
  seq: number;
  /** The confirmable notification still awaiting its ACK, if any (RFC 7641 4.5.2). */
  inFlight: { cancel(): { retransmits: number; interval: number } } | undefined;
}

export interface ObserverLimits {
  readonly maxObservers: number;
  readonly maxObserversPerPeer: number;
}

const SEQ_MODULUS = 1 << 24;

export class ObserverRegistry {
  readonly #entries = new Map<string, ObserverEntry>();
  readonly #perPeer = new Map<string, number>();
  readonly #limits: ObserverLimits;

  constructor(limits: ObserverLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * Adds (or renews: RFC 7641 4.1, same peer and token) an observer. Returns undefined when the bounds are
   * reached; the registration is then answered without Observe, which RFC 7641 allows.
   */
  add(peer: Peer, key: string, request: CoapMessage, requestKey: string, requestSize: number, now: number): ObserverEntry | undefined {
    const id = key + ' ' + request.token.toString('hex');
    const existing = this.#entries.get(id);
    const count = this.#perPeer.get(key) ?? 0;
    if (existing === undefined && (count >= this.#limits.maxObserversPerPeer || this.#entries.size >= this.#limits.maxObservers)) return undefined;
    if (existing !== undefined) this.remove(id);
    const entry: ObserverEntry = {
      id,
      peer: { address: peer.address, port: peer.port },
      peerKey: key,
      token: Buffer.from(request.token),
      path: uriPath(request),
      query: uriQuery(request),
      requestKey,
      requestSize,
      registeredAt: now,
      // Continue the sequence of a renewed registration so the client keeps seeing fresh values.
      seq: existing?.seq ?? 0,
      inFlight: undefined,
    };
    this.#entries.set(id, entry);
    this.#perPeer.set(key, (this.#perPeer.get(key) ?? 0) + 1);
    return entry;
  }

  get(id: string): ObserverEntry | undefined {
    return this.#entries.get(id);
  }

  find(key: string, token: Buffer): ObserverEntry | undefined {
    return this.#entries.get(key + ' ' + token.toString('hex'));
  }

  remove(id: string): boolean {
    const entry = this.#entries.get(id);
    if (entry === undefined) return false;
    entry.inFlight?.cancel();
    this.#entries.delete(id);
    const count = (this.#perPeer.get(entry.peerKey) ?? 1) - 1;
    if (count <= 0) this.#perPeer.delete(entry.peerKey);
    else this.#perPeer.set(entry.peerKey, count);
    return true;
  }

  /** The next Observe value for the entry (RFC 7641 4.4: strictly increasing modulo 2^24). */
  nextSeq(entry: ObserverEntry): number {
    entry.seq = (entry.seq + 1) % SEQ_MODULUS;
    return entry.seq;
  }

  list(filter: { readonly peer?: Peer; readonly path?: string } = {}): ObserverEntry[] {
    const key = filter.peer === undefined ? undefined : peerKey(filter.peer);
    const out: ObserverEntry[] = [];
    for (const entry of this.#entries.values()) {
      if (key !== undefined && entry.peerKey !== key) continue;
      if (filter.path !== undefined && entry.path !== filter.path) continue;
      out.push(entry);
    }
    return out;
  }

  clear(): void {
    for (const entry of this.#entries.values()) entry.inFlight?.cancel();
    this.#entries.clear();
    this.#perPeer.clear();
  }
}

/**
 * RFC 7641 3.4: is a notification with Observe `v2` received at `t2` (ms) newer than the one with `v1` at
 * `t1`? Sequence numbers compare in 24-bit serial arithmetic; anything over 128 s later counts as newer.
 */
export function isNewerNotification(v1: number, t1: number, v2: number, t2: number): boolean {
  return (v1 < v2 && v2 - v1 < 1 << 23) || (v1 > v2 && v1 - v2 > 1 << 23) || t2 > t1 + 128_000;
}
