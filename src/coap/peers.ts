/**
 * What the endpoint remembers about peers that send to it: the rate-limit bucket, recent message IDs, and
 * whether the peer has proven it receives at its address (RFC 7252 11.3). Bounded: least recently seen peers are forgotten
 * first, and idle ones after `idleTimeout`; a forgotten peer starts over (full bucket, unverified).
 */
import type { SeenByMessageId } from './dedup.js';
import { FifoMap } from './fifo-map.js';
import type { TokenBucket } from '../domain/rate-limit.js';

export interface PeerState extends TokenBucket {
  verified: boolean;
  lastSeen: number;
  /** Message IDs recently received from the peer (see MessageIdCache). */
  readonly seen: SeenByMessageId;
  /** A block-wise request of this peer is held back to the rate limit (at most one at a time). */
  paced?: boolean;
}

/** Re-ordering a peer at most this often keeps lookups cheap and the order close enough to least-recently-seen. */
const TOUCH_GRANULARITY = 1000;

export class PeerTable {
  readonly #peers = new FifoMap<string, PeerState>();
  readonly #maxPeers: number;
  readonly #idleTimeout: number;
  readonly #burst: number;

  constructor(maxPeers: number, idleTimeout: number, burst: number) {
    this.#maxPeers = Math.max(1, maxPeers);
    this.#idleTimeout = idleTimeout;
    this.#burst = burst;
  }

  get size(): number {
    return this.#peers.size;
  }

  /** The peer's state, created (and the least recently seen peer forgotten when full) on first sight. */
  touch(key: string, now: number): PeerState {
    let state = this.#peers.get(key);
    if (state === undefined) {
      if (this.#peers.size >= this.#maxPeers) {
        const oldest = this.#peers.oldest();
        if (oldest !== undefined) this.#peers.delete(oldest.key);
      }
      state = { tokens: this.#burst, refilledAt: now, verified: false, lastSeen: now, seen: new Map() };
      this.#peers.set(key, state);
    } else if (now - state.lastSeen > TOUCH_GRANULARITY) {
      this.#peers.set(key, state);
      state.lastSeen = now;
    }
    return state;
  }

  peek(key: string): PeerState | undefined {
    return this.#peers.get(key);
  }

  sweep(now: number): void {
    this.#peers.dropOldestWhile((state) => now - state.lastSeen >= this.#idleTimeout);
  }

  clear(): void {
    this.#peers.clear();
  }
}
