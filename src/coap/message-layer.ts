/**
 * The message layer both sides of CoapEndpoint share (RFC 7252 4): sending, CON retransmission and the
 * matching of ACK/RST to what we sent, message IDs, what is known of peers, and the counters. The endpoint
 * builds one and hands it to each part once, so the parts read plain fields on the hot path.
 */
import type { Logger } from 'pino';
import { CoapError } from './coap-error.js';
import type { MessageIdCache } from './dedup.js';
import type { CoapStats } from './endpoint-types.js';
import { FifoMap } from './fifo-map.js';
import { EMPTY_CODE, isResponseCode, type CoapMessage } from './message.js';
import type { DerivedTimes, TransmissionParameters } from './parameters.js';
import type { PeerTable } from './peers.js';
import type { RateLimit } from '../domain/rate-limit.js';
import { peerKey, type Peer, type Transport } from './transport.js';

/** The endpoint's options, defaults applied, that the server and client parts read. */
export interface EndpointSettings {
  readonly separateAfter: number;
  readonly requestTimeout: number;
  readonly maxMessageSize: number;
  readonly preferredSzx: number;
  readonly tokenLength: number;
  readonly rateLimit: RateLimit | false;
  readonly amplification: number | false;
  readonly maxBodySize: number;
}

/** A CON we sent, awaiting ACK or RST (RFC 7252 4.2). */
export interface Confirmable {
  readonly peer: Peer;
  readonly datagram: Buffer;
  retransmits: number;
  interval: number;
  timer: NodeJS.Timeout | undefined;
  readonly onAck: (ack: CoapMessage) => void;
  readonly onFail: (error: CoapError) => void;
}

/** A NON we sent, for matching a RST (RFC 7252 4.3). */
export interface NonConfirmable {
  readonly expires: number;
  readonly onReset: () => void;
}

export const EMPTY: Buffer = Buffer.alloc(0);

export function toBuffer(payload: Buffer | string | undefined): Buffer {
  return payload === undefined ? EMPTY : typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
}

export class MessageLayer {
  readonly transport: Transport;
  readonly logger: Logger | undefined;
  readonly params: TransmissionParameters;
  readonly times: DerivedTimes;
  readonly random: () => number;
  readonly seen: MessageIdCache;
  readonly peers: PeerTable;
  readonly confirmables = new Map<string, Confirmable>();
  readonly nonConfirmables = new Map<string, NonConfirmable>();

  readonly stats: CoapStats = {
    received: 0,
    sent: 0,
    malformed: 0,
    duplicates: 0,
    requests: 0,
    pings: 0,
    rejected: 0,
    resetsReceived: 0,
    retransmissions: 0,
    timeouts: 0,
    rateLimited: 0,
    paced: 0,
    amplificationLimited: 0,
    badOptions: 0,
    block1Rejected: 0,
    separateResponses: 0,
    handlerErrors: 0,
    notificationsSent: 0,
    notificationsReceived: 0,
    staleNotifications: 0,
    errors: 0,
  };

  /** Between start() and stop() of the endpoint; nothing is served or sent outside. */
  running = false;
  /** The last message ID sent to each peer (bounded like the peer table; a forgotten peer starts at random). */
  readonly #messageIds = new FifoMap<string, number>();
  readonly #maxPeers: number;

  constructor(parts: {
    readonly transport: Transport;
    readonly logger: Logger | undefined;
    readonly params: TransmissionParameters;
    readonly times: DerivedTimes;
    readonly random: () => number;
    readonly seen: MessageIdCache;
    readonly peers: PeerTable;
    readonly maxPeers: number;
  }) {
    this.transport = parts.transport;
    this.logger = parts.logger;
    this.params = parts.params;
    this.times = parts.times;
    this.random = parts.random;
    this.seen = parts.seen;
    this.peers = parts.peers;
    this.#maxPeers = parts.maxPeers;
  }

  /** Marks a peer as having proven its address (see CoapEndpoint.verifyPeer). */
  verifyPeer(peer: Peer): void {
    this.peers.touch(peerKey(peer), Date.now()).verified = true;
  }

  isVerified(peer: Peer): boolean {
    return this.transport.verifiesPeers || this.peers.peek(peerKey(peer))?.verified === true;
  }

  /** Runs work outside the socket handler's try/catch (timers, promise callbacks): nothing may escape. */
  guarded(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.stats.errors++;
      this.logger?.error({ err: error }, 'CoAP exchange handling failed');
    }
  }

  // ---------------------------------------------------------------- receiving ACK and RST

  onAcknowledgement(message: CoapMessage, key: string): void {
    if (message.code !== EMPTY_CODE && !isResponseCode(message.code)) return;
    const midKey = key + '#' + message.messageId;
    const c = this.confirmables.get(midKey);
    if (c === undefined) return;
    this.cancelConfirmable(midKey);
    this.markVerified(key);
    c.onAck(message);
  }

  onReset(message: CoapMessage, key: string): void {
    this.stats.resetsReceived++;
    const midKey = key + '#' + message.messageId;
    const c = this.confirmables.get(midKey);
    if (c !== undefined) {
      this.cancelConfirmable(midKey);
      this.markVerified(key);
      c.onFail(new CoapError('RESET', 'peer answered RST'));
      return;
    }
    const n = this.nonConfirmables.get(midKey);
    if (n !== undefined) {
      this.nonConfirmables.delete(midKey);
      this.markVerified(key);
      n.onReset();
    }
  }

  // ---------------------------------------------------------------- sending

  send(datagram: Buffer, peer: Peer): void {
    this.stats.sent++;
    this.transport.send(datagram, peer);
  }

  /**
   * Sends a CON and retransmits it (RFC 7252 4.2): first after ACK_TIMEOUT × [1, ACK_RANDOM_FACTOR), doubling,
   * MAX_RETRANSMIT times; TIMEOUT after the last wait. `inherit` continues another CON's schedule (RFC 7641 4.5.2).
   */
  sendConfirmable(
    peer: Peer,
    midKey: string,
    datagram: Buffer,
    handlers: Pick<Confirmable, 'onAck' | 'onFail'>,
    inherit?: { readonly retransmits: number; readonly interval: number },
  ): Confirmable {
    const p = this.params;
    const c: Confirmable = {
      peer,
      datagram,
      retransmits: inherit?.retransmits ?? 0,
      interval: inherit?.interval ?? p.ackTimeout * (1 + this.random() * (p.ackRandomFactor - 1)),
      timer: undefined,
      ...handlers,
    };
    this.confirmables.set(midKey, c);
    this.send(datagram, peer);
    c.timer = setTimeout(() => this.guarded(() => this.#retransmit(midKey, c)), c.interval);
    return c;
  }

  #retransmit(midKey: string, c: Confirmable): void {
    if (this.confirmables.get(midKey) !== c || !this.running) return;
    if (c.retransmits >= this.params.maxRetransmit) {
      this.confirmables.delete(midKey);
      this.stats.timeouts++;
      c.onFail(new CoapError('TIMEOUT', `no ACK after ${c.retransmits} retransmissions`));
      return;
    }
    c.retransmits++;
    c.interval *= 2;
    this.stats.retransmissions++;
    this.send(c.datagram, c.peer);
    c.timer = setTimeout(() => this.guarded(() => this.#retransmit(midKey, c)), c.interval);
  }

  cancelConfirmable(midKey: string): void {
    const c = this.confirmables.get(midKey);
    if (c === undefined) return;
    clearTimeout(c.timer);
    this.confirmables.delete(midKey);
  }

  /** At stop(): every CON still awaiting its ACK fails with `error`. */
  failConfirmables(error: CoapError): void {
    for (const [key, c] of [...this.confirmables]) {
      clearTimeout(c.timer);
      this.confirmables.delete(key);
      c.onFail(error);
    }
  }

  markVerified(key: string): void {
    const state = this.peers.peek(key) ?? this.peers.touch(key, Date.now());
    state.verified = true;
  }

  /**
   * The next message ID towards one peer. Per peer, as RFC 7252 4.4 asks ("MUST NOT be re-used (in the
   * communication with the same endpoint) within the EXCHANGE_LIFETIME"): one counter for every peer wrapped
   * around within minutes at a fleet's rate (1,000 devices × a FOTA's ~30 messages), and a device answered a
   * new request from its duplicate cache with the old response (another token).
   */
  nextMessageId(peerKey: string): number {
    const last = this.#messageIds.get(peerKey);
    const next = last === undefined ? Math.floor(this.random() * 0x10000) : (last + 1) & 0xffff;
    this.#messageIds.set(peerKey, next);
    if (this.#messageIds.size > this.#maxPeers) this.#messageIds.delete(this.#messageIds.oldest()!.key);
    return next;
  }

  /** Forgets the NONs whose RST can no longer come. */
  expireNonConfirmables(now: number): void {
    // Same lifetime for all, so insertion order is expiry order.
    for (const [key, n] of this.nonConfirmables) {
      if (n.expires > now) break;
      this.nonConfirmables.delete(key);
    }
  }
}
