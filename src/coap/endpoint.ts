/**
 * CoapEndpoint: the CoAP message layer (RFC 7252 4) over a Transport, serving requests and sending them,
 * with Observe (RFC 7641) and block-wise transfers (RFC 7959) on both sides, and bounds against abuse.
 * It knows nothing of LwM2M or the platform: handlers and callers bring the meaning.
 */
import { randomFillSync } from 'node:crypto';
import type { Logger } from 'pino';
import { BlockOptionError, decodeBlock, encodeBlock, MAX_SZX, szxFor, type BlockOption } from './block.js';
import { Block1Assembler, type Block1Limits } from './block1-assembler.js';
import { fetchRemainingBlocks, fitBlock, fitResponse, requestKey, sendWithBlock1, size1Option, type FittedResponse, type OutgoingRequest } from './blockwise.js';
import { BoundedStore, type StoreLimits } from './bounded-store.js';
import { CoapError } from './coap-error.js';
import { FifoMap } from './fifo-map.js';
import { MessageIdCache, type SeenMessage } from './dedup.js';
import {
  codeClass,
  decodeMessage,
  emptyMessage,
  EMPTY_CODE,
  encodeMessage,
  isResponseCode,
  isSuccess,
  Method,
  ResponseCode,
  type CoapCode,
  type CoapMessage,
  type CoapOption,
  type MessageType,
} from './message.js';
import { isNewerNotification, ObserverRegistry, type Observer, type ObserverLimits } from './observers.js';
import { checkOptions, decodeUint, etag, observe, OptionNumber, option, withoutOptions, withOption } from './options.js';
import { DEFAULT_TRANSMISSION, deriveTimes, type DerivedTimes, type TransmissionParameters } from './parameters.js';
import { PeerTable, type PeerState } from './peers.js';
import { takeToken, type RateLimit } from '../domain/rate-limit.js';
import { formatPeer, peerKey, UdpTransport, type BoundAddress, type Peer, type Transport } from './transport.js';

/** What a request handler answers. */
export interface CoapResponse {
  readonly code: CoapCode;
  readonly options?: readonly CoapOption[];
  /** Strings are sent as UTF-8. */
  readonly payload?: Buffer | string;
  /**
   * Answering a GET/FETCH with `Observe: 0`: true adds the client to the resource's observers (RFC 7641 4.1),
   * and the response then carries Observe. Without it nothing is registered and the response has no Observe.
   */
  readonly observe?: boolean;
  /**
   * The payload is this Block2 block of a larger body, cut by the handler for the request's Block2 (RFC 7959
   * 2.4) and read alone (a file served block by block): sent as that block, or as a smaller first part of it
   * when the peer's size limit asks, and never kept for later blocks. The handler gives ETag and Size2; the
   * endpoint adds Block2. Ignored on a response other than 2.xx.
   */
  readonly block2?: BlockOption;
}

/**
 * Serves one request. `request.payload` is the whole body (Block1 blocks are reassembled first, and the
 * Block1/Size1 options removed). May answer synchronously or with a promise; a throw or rejection becomes 5.00.
 */
export type RequestHandler = (request: CoapMessage, peer: Peer) => CoapResponse | Promise<CoapResponse>;

/** A request to send: `code` is a method (Method.GET …). */
export interface CoapRequest {
  readonly code: CoapCode;
  readonly options?: readonly CoapOption[];
  readonly payload?: Buffer | string;
  /** CON (default) or NON. */
  readonly confirmable?: boolean;
}

export interface RequestOptions {
  /** Overall time for the request in ms (waiting for NSTART, every block, separate responses). Default: the endpoint's requestTimeout. */
  readonly timeout?: number;
  readonly signal?: AbortSignal;
  /**
   * Largest datagram to send or ask for, in bytes (the service's "CoAP Max Message Size"). Bigger bodies go
   * in Block1 blocks, and Block2 blocks are asked no bigger. Default: the endpoint's maxMessageSize.
   */
  readonly maxMessageSize?: number;
  /** Largest response body accepted from Block2 reassembly, in bytes. Default: the endpoint's block1.maxBodySize. */
  readonly maxBodySize?: number;
  /** Told of each request/response exchange the call makes (one, or one per Block1/Block2 block). */
  readonly onExchange?: () => void;
}

export interface ObserveOptions extends RequestOptions {
  /** Called once when the observation ends for a reason other than cancel(): error or final notification, RST. */
  readonly onEnd?: (reason: string) => void;
}

/** A client observation (RFC 7641 3). */
export interface Observation {
  /** The registration's response (with the whole body). */
  readonly response: CoapMessage;
  /** Whether notifications are expected: the server accepted (its response has Observe) and nothing ended it since. */
  readonly active: boolean;
  /** The observation's token (what its notifications carry); empty when the server did not accept it. */
  readonly token: Buffer;
  /**
   * Ends the observation. `proactive` (default true) sends a GET with Observe: 1 and the same token (RFC 7641
   * 3.6) and waits for its response; otherwise the observation is forgotten and the next notification
   * rejected with RST. Never rejects; resolves with the deregistration's response when one was sent and
   * answered.
   */
  cancel(options?: { readonly proactive?: boolean; readonly timeout?: number }): Promise<CoapMessage | undefined>;
}

export interface NotifyOptions {
  /**
   * Send as CON (default false: NON). Notifications to a peer that has not proven its address go as CON
   * anyway: its ACK proves it, its silence ends the observation (RFC 7252 11.3, RFC 7641 4.5).
   */
  readonly confirmable?: boolean;
}

export interface CoapEndpointOptions {
  /** Where datagrams go. Default: a UdpTransport on `host`/`port`. */
  readonly transport?: Transport;
  /** For the default transport: bind address, default `::` dual-stack (see UdpTransport). */
  readonly host?: string;
  /** For the default transport: UDP port, default 0 (a free one; see address()). */
  readonly port?: number;
  /** Malformed datagrams and other peer faults are logged at debug level, handler failures at error. */
  readonly logger?: Logger;
  /** RFC 7252 4.8 parameters; ACK_TIMEOUT 2 s, ACK_RANDOM_FACTOR 1.5, MAX_RETRANSMIT 4, NSTART 1, MAX_LATENCY 100 s. */
  readonly transmission?: Partial<TransmissionParameters>;
  /**
   * A CON request whose handler has not answered after this many ms gets an empty ACK, and the response
   * follows as a separate CON (RFC 7252 5.2.2). Default 1000: well inside the client's first retransmission
   * (ACK_TIMEOUT, 2–3 s), so a slow handler does not make it retransmit.
   */
  readonly separateResponseAfter?: number;
  /** Default overall timeout of request()/observe() in ms: MAX_TRANSMIT_WAIT (93 s with the default parameters). */
  readonly requestTimeout?: number;
  /** Largest datagram sent (and Block2 block asked for), bytes. Default 1152 (RFC 7252 4.6: 1024-byte payload). */
  readonly maxMessageSize?: number;
  /** Block size we prefer for Block1 (2.31) and Block2, bytes: 16…1024, default 1024. */
  readonly preferredBlockSize?: number;
  /** Bytes of token for our requests, 1…8, default 8 (RFC 7252 5.3.1: enough randomness against spoofed responses). */
  readonly tokenLength?: number;
  /** Message IDs remembered for de-duplication (RFC 7252 4.5), total. Default 20 000. */
  readonly dedupCapacity?: number;
  /** Peers remembered (rate-limit bucket, address verification). Default 100 000, forgotten after peerIdleTimeout ms (default 1 h). */
  readonly maxPeers?: number;
  readonly peerIdleTimeout?: number;
  /** Requests per peer: default 100/s sustained, bursts of 200; above, 4.29 with Max-Age (RFC 8516). false: no limit. */
  readonly rateLimit?: RateLimit | false;
  /**
   * RFC 7252 11.3: until a peer has proven its address, a response to it is at most this many times the
   * size of its request (larger bodies are cut to a first Block2 block). Default 3; false: no limit.
   */
  readonly amplificationFactor?: number | false;
  /** Block1 reassembly bounds: maxBodySize 1 MiB, 4 transfers per peer, 1000 in total, 64 MiB buffered, 60 s idle lifetime. */
  readonly block1?: Partial<Block1Limits>;
  /** Large responses kept for Block2 follow-up requests: 4 per peer, 1000 in total, 64 MiB, 60 s lifetime. */
  readonly block2?: Partial<StoreLimits>;
  /** Observers of our resources: 100 000 in total, 64 per peer. */
  readonly observers?: Partial<ObserverLimits>;
  /** Random numbers in [0, 1) for retransmission jitter; tests pin it. */
  readonly random?: () => number;
}

/** Counters since start (plus current sizes of the bounded tables). */
export interface CoapStats {
  received: number;
  sent: number;
  malformed: number;
  duplicates: number;
  requests: number;
  pings: number;
  rejected: number;
  resetsReceived: number;
  retransmissions: number;
  timeouts: number;
  rateLimited: number;
  /** Block-wise continuation requests held back to the rate instead of refused (see PACE_MAX_MS). */
  paced: number;
  amplificationLimited: number;
  badOptions: number;
  block1Rejected: number;
  separateResponses: number;
  handlerErrors: number;
  notificationsSent: number;
  notificationsReceived: number;
  staleNotifications: number;
  errors: number;
}

export interface CoapTableSizes {
  readonly peers: number;
  readonly dedupEntries: number;
  readonly block1Transfers: number;
  readonly block1Bytes: number;
  readonly block2Entries: number;
  readonly observers: number;
  readonly observations: number;
  readonly outstanding: number;
}

/** A request being served. */
interface ServerExchange {
  readonly peer: Peer;
  readonly key: string;
  readonly request: CoapMessage;
  readonly requestSize: number;
  readonly seen: SeenMessage;
  readonly state: PeerState;
  readonly block2: BlockOption | undefined;
  /** The No-Response option's bits (RFC 7967), 0 when absent. */
  readonly noResponse: number;
  block1: BlockOption | undefined;
  requestKey: string | undefined;
  registering: boolean;
  separate: boolean;
  done: boolean;
  /** When the handler was called (only set for asynchronous answers). */
  startedAt: number;
}

/** A CON we sent, awaiting ACK or RST (RFC 7252 4.2). */
interface Confirmable {
  readonly peer: Peer;
  readonly datagram: Buffer;
  retransmits: number;
  interval: number;
  timer: NodeJS.Timeout | undefined;
  readonly onAck: (ack: CoapMessage) => void;
  readonly onFail: (error: CoapError) => void;
}

/** A NON we sent, for matching a RST (RFC 7252 4.3). */
interface NonConfirmable {
  readonly expires: number;
  readonly onReset: () => void;
}

interface ClientExchange {
  readonly kind: 'exchange';
  readonly key: string;
  readonly token: Buffer;
  readonly observation: ClientObservation | undefined;
  /** Settles the request once: a response, or the error that ended it. */
  readonly settle: (result: CoapMessage | CoapError) => void;
}

interface ClientObservation {
  readonly kind: 'observation';
  /** Where the observed resource is; follows the peer when its transport says it moved (DTLS Connection ID). */
  peer: Peer;
  key: string;
  tokenKey: string;
  token: Buffer;
  readonly request: OutgoingRequest;
  readonly onNotification: (notification: CoapMessage) => void;
  readonly onEnd: ((reason: string) => void) | undefined;
  readonly maxMessageSize: number;
  readonly maxBodySize: number;
  lastSeq: number;
  lastAt: number;
  active: boolean;
}

interface CallContext {
  readonly signal: AbortSignal;
  readonly maxMessageSize: number;
  readonly maxBodySize: number;
  dispose(): void;
}

interface SlotQueue {
  active: number;
  readonly waiting: (() => void)[];
}

const EMPTY: Buffer = Buffer.alloc(0);
const TOKEN_POOL_SIZE = 4096;
const HOUSEKEEPING_INTERVAL = 1000;
/**
 * The longest a block-wise continuation request (Block2 NUM > 0) is held back to the rate limit before it is
 * refused with 4.29: well under a client's ACK_TIMEOUT (2 s), so it waits without retransmitting.
 */
const PACE_MAX_MS = 500;
/** RFC 7967: the No-Response bits that suppress 2.xx (2), 4.xx (8) and 5.xx (16) responses. */
const NO_RESPONSE_BITS: Readonly<Record<number, number>> = { 2: 2, 4: 8, 5: 16 };

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * A CoAP endpoint: server and client at once, on one transport.
 *
 * @example
 * const coap = new CoapEndpoint({ port: 5683, logger });
 * coap.onRequest((request) => uriPath(request) === '/hello' ? { code: ResponseCode.Content, payload: 'hi' } : { code: ResponseCode.NotFound });
 * await coap.start();
 * const reply = await coap.request({ address: '192.0.2.1', port: 5683 }, { code: Method.GET, options: uriPathOptions('/3/0/1') });
 */
export class CoapEndpoint {
  readonly #transport: Transport;
  readonly #logger: Logger | undefined;
  readonly #params: TransmissionParameters;
  readonly #times: DerivedTimes;
  readonly #separateAfter: number;
  readonly #requestTimeout: number;
  readonly #maxMessageSize: number;
  readonly #preferredSzx: number;
  readonly #tokenLength: number;
  readonly #rateLimit: RateLimit | false;
  readonly #amplification: number | false;
  readonly #maxBodySize: number;
  readonly #random: () => number;

  readonly #seen: MessageIdCache;
  readonly #peers: PeerTable;
  readonly #block1: Block1Assembler;
  readonly #block2: BoundedStore<CoapResponseParts>;
  readonly #observers: ObserverRegistry;

  readonly #pending = new Set<ServerExchange>();
  readonly #confirmables = new Map<string, Confirmable>();
  readonly #nonConfirmables = new Map<string, NonConfirmable>();
  readonly #tokens = new Map<string, ClientExchange | ClientObservation>();
  readonly #slots = new Map<string, SlotQueue>();

  readonly #stats: CoapStats = {
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

  #handler: RequestHandler | undefined;
  #pingHandler: ((peer: Peer) => void) | undefined;
  #strayNotificationHandler: ((token: string, peer: Peer) => Promise<boolean>) | undefined;
  #running = false;
  #housekeeping: NodeJS.Timeout | undefined;
  #slowCheck: NodeJS.Timeout | undefined;
  /** The last message ID sent to each peer (bounded like the peer table; a forgotten peer starts at random). */
  readonly #messageIds = new FifoMap<string, number>();
  /** Timers of block-wise requests held back to the rate limit. */
  readonly #pacing = new Set<NodeJS.Timeout>();
  readonly #maxPeers: number;
  #etag: number;
  #tokenPool = Buffer.alloc(0);
  #tokenPoolOffset = 0;

  constructor(options: CoapEndpointOptions = {}) {
    this.#logger = options.logger;
    this.#transport = options.transport ?? new UdpTransport({ host: options.host, port: options.port, logger: options.logger });
    this.#params = { ...DEFAULT_TRANSMISSION, ...options.transmission };
    this.#times = deriveTimes(this.#params);
    this.#separateAfter = options.separateResponseAfter ?? 1000;
    this.#requestTimeout = options.requestTimeout ?? this.#times.maxTransmitWait;
    this.#maxMessageSize = options.maxMessageSize ?? 1152;
    this.#preferredSzx = Math.min(MAX_SZX, szxFor(options.preferredBlockSize ?? 1024));
    this.#tokenLength = Math.max(1, Math.min(8, options.tokenLength ?? 8));
    this.#rateLimit = options.rateLimit ?? { rate: 100, burst: 200 };
    this.#amplification = options.amplificationFactor ?? 3;
    this.#random = options.random ?? Math.random;
    const block1: Block1Limits = {
      maxBodySize: 1 << 20,
      maxEntriesPerOwner: 4,
      maxEntries: 1000,
      maxBytes: 64 << 20,
      lifetime: 60_000,
      ...options.block1,
    };
    this.#maxBodySize = block1.maxBodySize;
    this.#seen = new MessageIdCache(options.dedupCapacity ?? 20_000);
    this.#peers = new PeerTable(options.maxPeers ?? 100_000, options.peerIdleTimeout ?? 3_600_000, this.#rateLimit ? this.#rateLimit.burst : 0);
    this.#block1 = new Block1Assembler(block1);
    this.#block2 = new BoundedStore({ maxEntriesPerOwner: 4, maxEntries: 1000, maxBytes: 64 << 20, lifetime: 60_000, ...options.block2 });
    this.#observers = new ObserverRegistry({ maxObservers: 100_000, maxObserversPerPeer: 64, ...options.observers });
    this.#maxPeers = options.maxPeers ?? 100_000;
    this.#etag = Math.floor(this.#random() * 0x100000000);
  }

  // ---------------------------------------------------------------- lifecycle

  async start(): Promise<void> {
    if (this.#running) return;
    await this.#transport.start(this.#onDatagram);
    this.#running = true;
    this.#housekeeping = setInterval(() => this.#sweep(), HOUSEKEEPING_INTERVAL);
    this.#housekeeping.unref();
  }

  /** Stops: pending requests and observations fail with STOPPED, nothing more is sent, the transport closes. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    clearInterval(this.#housekeeping);
    for (const timer of this.#pacing) clearTimeout(timer);
    this.#pacing.clear();
    for (const exchange of this.#pending) exchange.done = true;
    this.#pending.clear();
    clearInterval(this.#slowCheck);
    this.#slowCheck = undefined;
    const stopped = new CoapError('STOPPED', 'endpoint stopped');
    for (const [key, c] of [...this.#confirmables]) {
      clearTimeout(c.timer);
      this.#confirmables.delete(key);
      c.onFail(stopped);
    }
    for (const entry of [...this.#tokens.values()]) {
      if (entry.kind === 'exchange') entry.settle(stopped);
      else this.#endObservation(entry, 'endpoint stopped');
    }
    for (const queue of this.#slots.values()) for (const grant of queue.waiting) grant();
    this.#slots.clear();
    this.#nonConfirmables.clear();
    this.#observers.clear();
    this.#seen.clear();
    this.#block1.clear();
    this.#block2.clear();
    this.#peers.clear();
    await this.#transport.stop();
  }

  /** Where the endpoint listens (after start()). */
  address(): BoundAddress {
    return this.#transport.address();
  }

  // ---------------------------------------------------------------- hooks

  /** The one request handler; without one, requests get 4.04. */
  onRequest(handler: RequestHandler): void {
    this.#handler = handler;
  }

  /** Called for each CoAP ping (empty CON, answered with RST, RFC 7252 4.3): a sign of life for keep-alive. */
  onPing(handler: (peer: Peer) => void): void {
    this.#pingHandler = handler;
  }

  /**
   * Asked before a notification (a response with Observe) whose token no observation here has is rejected: it may
   * belong to an observation this endpoint should take up (a cluster node taking over another node's device).
   * Resolving true means an observation with that token from that peer exists now; the notification is then
   * acknowledged and delivered to it. Otherwise it is rejected with RST as usual.
   */
  onStrayNotification(handler: (token: string, peer: Peer) => Promise<boolean>): void {
    this.#strayNotificationHandler = handler;
  }

  stats(): CoapStats & CoapTableSizes {
    return {
      ...this.#stats,
      peers: this.#peers.size,
      dedupEntries: this.#seen.size,
      block1Transfers: this.#block1.transfers,
      block1Bytes: this.#block1.bufferedBytes,
      block2Entries: this.#block2.size,
      observers: this.#observers.size,
      observations: [...this.#tokens.values()].filter((t) => t.kind === 'observation').length,
      outstanding: this.#confirmables.size,
    };
  }

  /** Marks a peer as having proven its address (e.g. authenticated by the application), lifting RFC 7252 11.3 limits. */
  verifyPeer(peer: Peer): void {
    this.#peers.touch(peerKey(peer), Date.now()).verified = true;
  }

  isVerified(peer: Peer): boolean {
    return this.#transport.verifiesPeers || this.#peers.peek(peerKey(peer))?.verified === true;
  }

  // ---------------------------------------------------------------- server side: observers

  /** Observers of our resources, optionally those of one peer or one path. */
  observers(filter: { readonly peer?: Peer; readonly path?: string } = {}): Observer[] {
    return this.#observers.list(filter).map(({ id, peer, token, path, query, registeredAt }) => ({ id, peer, token, path, query, registeredAt }));
  }

  /** Forgets an observer (no final notification is sent). Returns whether it was registered. */
  removeObserver(observer: Observer | string): boolean {
    return this.#observers.remove(typeof observer === 'string' ? observer : observer.id);
  }

  /**
   * Sends a notification to an observer with the next Observe sequence number (RFC 7641 4.2). A response code
   * other than 2.xx ends the observation (sent without Observe). Large bodies go as Block2 block 0; the
   * client fetches the rest. Resolves when sent (NON) or acknowledged (CON); rejects with RESET or TIMEOUT,
   * after which the observer is removed (RFC 7641 4.5), or NO_OBSERVER. A newer CON notification to the same
   * observer replaces one still being retransmitted (RFC 7641 4.5.2); the replaced one resolves.
   */
  notify(observer: Observer | string, response: CoapResponse, options: NotifyOptions = {}): Promise<void> {
    const entry = this.#observers.get(typeof observer === 'string' ? observer : observer.id);
    if (entry === undefined || !this.#running) return Promise.reject(new CoapError('NO_OBSERVER', 'no such observer'));
    if (!isResponseCode(response.code)) return Promise.reject(new TypeError(`a notification needs a response code, not ${response.code}`));
    const final = !isSuccess(response.code);
    let responseOptions = withoutOptions(response.options ?? [], OptionNumber.Observe);
    const payload = toBuffer(response.payload);
    const verified = this.isVerified(entry.peer);
    const limit = this.#limitFor(verified, entry.requestSize);
    const stored = responseOptions;
    if (!final) responseOptions = [...responseOptions, option(OptionNumber.Observe, this.#observers.nextSeq(entry))];
    const fitted = this.#fit(entry.token.length, response.code, responseOptions, payload, undefined, limit);
    if (!fitted.ok) return Promise.reject(new CoapError('TOO_LARGE', 'notification cannot be encoded'));
    if (fitted.block?.more) {
      this.#block2.set(entry.peerKey, entry.peerKey + '\n' + entry.requestKey, { code: response.code, options: withoutOptions(fitted.stored ?? stored, OptionNumber.Observe), payload }, payload.length, Date.now(), 'evict');
    }
    const confirmable = options.confirmable === true || !verified;
    const messageId = this.#nextMessageId(entry.peerKey);
    let datagram: Buffer;
    try {
      datagram = encodeMessage({ type: confirmable ? 'CON' : 'NON', code: response.code, messageId, token: entry.token, options: fitted.options, payload: fitted.payload });
    } catch (error) {
      return Promise.reject(new CoapError('TOO_LARGE', `notification cannot be encoded: ${(error as Error).message}`));
    }
    this.#stats.notificationsSent++;
    if (final) this.#observers.remove(entry.id);
    if (!confirmable) {
      this.#nonConfirmables.set(entry.peerKey + '#' + messageId, { expires: Date.now() + this.#times.nonLifetime, onReset: () => this.#observers.remove(entry.id) });
      this.#send(datagram, entry.peer);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const inherited = entry.inFlight?.cancel();
      const midKey = entry.peerKey + '#' + messageId;
      const c = this.#sendConfirmable(
        entry.peer,
        midKey,
        datagram,
        {
          onAck: () => {
            if (entry.inFlight === inFlight) entry.inFlight = undefined;
            resolve();
          },
          onFail: (error) => {
            if (entry.inFlight === inFlight) entry.inFlight = undefined;
            this.#observers.remove(entry.id);
            reject(error);
          },
        },
        inherited,
      );
      const inFlight = {
        cancel: () => {
          this.#cancelConfirmable(midKey);
          resolve();
          return { retransmits: c.retransmits, interval: c.interval };
        },
      };
      if (!final) entry.inFlight = inFlight;
    });
  }

  // ---------------------------------------------------------------- client side

  /**
   * Sends a request and resolves with its response (the whole body: Block1 and Block2 are handled). CON by
   * default, retransmitted per RFC 7252 4.2; at most NSTART outstanding per peer, the rest queued. Rejects with
   * CoapError: TIMEOUT, RESET, ABORTED, STOPPED, BLOCKWISE, TOO_LARGE, BAD_RESPONSE. Error responses (4.xx,
   * 5.xx) resolve: they are answers.
   */
  async request(peer: Peer, request: CoapRequest, options: RequestOptions = {}): Promise<CoapMessage> {
    const ctx = this.#callContext(options);
    try {
      const outgoing = toOutgoing(request);
      const send = (r: OutgoingRequest) => {
        options.onExchange?.();
        return this.#exchange(peer, r, ctx, undefined, undefined);
      };
      const first = await sendWithBlock1(send, outgoing, this.#tokenLength, ctx.maxMessageSize);
      return await fetchRemainingBlocks(send, outgoing, first, this.#tokenLength, ctx.maxMessageSize, ctx.maxBodySize);
    } finally {
      ctx.dispose();
    }
  }

  /**
   * Registers an observation (RFC 7641 3.1: the request with Observe: 0) and resolves once the server has
   * answered. Later notifications reach `onNotification` in order (RFC 7641 3.4: older ones are dropped),
   * with their whole body; CON notifications are acknowledged.
   */
  async observe(peer: Peer, request: CoapRequest, onNotification: (notification: CoapMessage) => void, options: ObserveOptions = {}): Promise<Observation> {
    const ctx = this.#callContext(options);
    try {
      const base = toOutgoing(request);
      const outgoing = { ...base, options: withOption(base.options, OptionNumber.Observe, 0) };
      const observation: ClientObservation = {
        kind: 'observation',
        peer,
        key: peerKey(peer),
        tokenKey: '',
        token: EMPTY,
        request: { ...base, options: withoutOptions(base.options, OptionNumber.Observe) },
        onNotification,
        onEnd: options.onEnd,
        maxMessageSize: ctx.maxMessageSize,
        maxBodySize: ctx.maxBodySize,
        lastSeq: 0,
        lastAt: 0,
        active: false,
      };
      const first = await this.#exchange(peer, outgoing, ctx, observation, undefined);
      const send = (r: OutgoingRequest) => this.#exchange(peer, r, ctx, undefined, undefined);
      let response = first;
      try {
        response = await fetchRemainingBlocks(send, observation.request, first, this.#tokenLength, ctx.maxMessageSize, ctx.maxBodySize);
      } catch (error) {
        this.#endObservation(observation, 'registration body could not be fetched');
        throw error;
      }
      return {
        response,
        get active() {
          return observation.active;
        },
        get token() {
          return observation.token;
        },
        cancel: (cancelOptions = {}) => this.#cancelObservation(observation, cancelOptions.proactive ?? true, cancelOptions.timeout),
      };
    } finally {
      ctx.dispose();
    }
  }

  /**
   * Takes up an observation made before (by another process, or before a restart): nothing is sent; the
   * notifications `peer` sends with `token` are delivered from now on, and the observation can be cancelled as
   * usual (`request` is what the registration asked, for the deregistration and block-wise bodies). `response`
   * of the result is an empty 2.05: the registration's answer was had back then.
   */
  resumeObservation(peer: Peer, token: Buffer, request: CoapRequest, onNotification: (notification: CoapMessage) => void, options: { onEnd?: ObserveOptions['onEnd'] } = {}): Observation {
    const base = toOutgoing(request);
    const tokenKey = token.toString('hex');
    const observation: ClientObservation = {
      kind: 'observation',
      peer,
      key: peerKey(peer),
      tokenKey,
      token,
      request: { ...base, options: withoutOptions(base.options, OptionNumber.Observe) },
      onNotification,
      onEnd: options.onEnd,
      maxMessageSize: this.#maxMessageSize,
      maxBodySize: this.#maxBodySize,
      // Any sequence number is newer than this one (RFC 7641 3.4: after 128 s, whatever the number).
      lastSeq: 0,
      lastAt: 0,
      active: this.#running,
    };
    if (this.#running) this.#tokens.set(tokenKey, observation);
    return {
      response: { type: 'ACK', code: '2.05', messageId: 0, token, options: [], payload: EMPTY },
      get active() {
        return observation.active;
      },
      token,
      cancel: (cancelOptions = {}) => this.#cancelObservation(observation, cancelOptions.proactive ?? true, cancelOptions.timeout),
    };
  }

  async #cancelObservation(observation: ClientObservation, proactive: boolean, timeout: number | undefined): Promise<CoapMessage | undefined> {
    const wasActive = observation.active;
    this.#endObservation(observation, undefined);
    if (!proactive || !wasActive) return undefined;
    const ctx = this.#callContext({ timeout });
    try {
      const request = { ...observation.request, options: withOption(observation.request.options, OptionNumber.Observe, 1) };
      // RFC 7641 3.6: the deregistration carries the observation's token.
      return await this.#exchange(observation.peer, request, ctx, undefined, observation.token);
    } catch (error) {
      this.#logger?.debug({ err: error, peer: formatPeer(observation.peer) }, 'CoAP observe deregistration failed');
      return undefined;
    } finally {
      ctx.dispose();
    }
  }

  #endObservation(observation: ClientObservation, reason: string | undefined): void {
    if (this.#tokens.get(observation.tokenKey) === observation) this.#tokens.delete(observation.tokenKey);
    const wasActive = observation.active;
    observation.active = false;
    if (wasActive && reason !== undefined) {
      try {
        observation.onEnd?.(reason);
      } catch (error) {
        this.#logger?.error({ err: error }, 'CoAP observation onEnd failed');
      }
    }
  }

  #callContext(options: RequestOptions): CallContext {
    const controller = new AbortController();
    const timeout = options.timeout ?? this.#requestTimeout;
    const timer = setTimeout(() => controller.abort(new CoapError('TIMEOUT', `no response within ${timeout} ms`)), timeout);
    const outer = options.signal;
    const onAbort = () => controller.abort(new CoapError('ABORTED', 'request aborted'));
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    return {
      signal: controller.signal,
      maxMessageSize: options.maxMessageSize ?? this.#maxMessageSize,
      maxBodySize: options.maxBodySize ?? this.#maxBodySize,
      dispose: () => {
        clearTimeout(timer);
        outer?.removeEventListener('abort', onAbort);
      },
    };
  }

  /** One request message and its response: NSTART slot, token, retransmission, separate response. */
  async #exchange(peer: Peer, request: OutgoingRequest, ctx: CallContext, observation: ClientObservation | undefined, fixedToken: Buffer | undefined): Promise<CoapMessage> {
    if (!this.#running) throw new CoapError('STOPPED', 'endpoint not running');
    const key = peerKey(peer);
    await this.#acquireSlot(key, ctx.signal);
    let held = true;
    const release = () => {
      if (held) {
        held = false;
        this.#releaseSlot(key);
      }
    };
    try {
      return await new Promise<CoapMessage>((resolve, reject) => {
        if (!this.#running) throw new CoapError('STOPPED', 'endpoint stopped');
        const token = fixedToken ?? this.#newToken();
        const tokenKey = token.toString('hex');
        const messageId = this.#nextMessageId(key);
        const midKey = key + '#' + messageId;
        let datagram: Buffer;
        try {
          datagram = encodeMessage({ type: request.confirmable ? 'CON' : 'NON', code: request.code, messageId, token, options: request.options, payload: request.payload });
        } catch (error) {
          throw new CoapError('TOO_LARGE', (error as Error).message);
        }
        let settled = false;
        const onAbort = () => exchange.settle(ctx.signal.reason instanceof CoapError ? ctx.signal.reason : new CoapError('ABORTED', 'aborted'));
        const exchange: ClientExchange = {
          kind: 'exchange',
          key,
          token,
          observation,
          settle: (result) => {
            if (settled) return;
            settled = true;
            ctx.signal.removeEventListener('abort', onAbort);
            if (this.#tokens.get(tokenKey) === exchange) this.#tokens.delete(tokenKey);
            this.#cancelConfirmable(midKey);
            this.#nonConfirmables.delete(midKey);
            release();
            if (result instanceof CoapError) {
              reject(result);
              return;
            }
            // RFC 7641 3.1: the server accepted the registration when its 2.xx response carries Observe.
            if (observation !== undefined && isSuccess(result.code) && observe(result) !== undefined && this.#running) {
              observation.token = token;
              observation.tokenKey = tokenKey;
              observation.lastSeq = observe(result)!;
              observation.lastAt = Date.now();
              observation.active = true;
              this.#tokens.set(tokenKey, observation);
            }
            resolve(result);
          },
        };
        if (ctx.signal.aborted) {
          onAbort();
          return;
        }
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        this.#tokens.set(tokenKey, exchange);
        if (request.confirmable) {
          this.#sendConfirmable(peer, midKey, datagram, {
            onAck: (ack) => {
              // RFC 7252 4.7: an acknowledged request no longer counts against NSTART.
              release();
              if (ack.code === EMPTY_CODE) return; // a separate response follows (5.2.2)
              this.#deliverResponse(exchange, ack);
            },
            onFail: (error) => exchange.settle(error),
          });
        } else {
          this.#nonConfirmables.set(midKey, {
            expires: Date.now() + this.#times.nonLifetime,
            onReset: () => exchange.settle(new CoapError('RESET', 'peer answered RST')),
          });
          this.#send(datagram, peer);
        }
      });
    } finally {
      release();
    }
  }

  #deliverResponse(exchange: ClientExchange, response: CoapMessage): void {
    if (!response.token.equals(exchange.token)) {
      exchange.settle(new CoapError('BAD_RESPONSE', 'piggy-backed response with another token'));
      return;
    }
    if (!checkOptions(response.options).ok) {
      exchange.settle(new CoapError('BAD_RESPONSE', 'response with an unrecognised critical option'));
      return;
    }
    exchange.settle(response);
  }

  #acquireSlot(key: string, signal: AbortSignal): Promise<void> | void {
    if (signal.aborted) throw signal.reason instanceof CoapError ? signal.reason : new CoapError('ABORTED', 'aborted');
    let queue = this.#slots.get(key);
    if (queue === undefined) {
      queue = { active: 0, waiting: [] };
      this.#slots.set(key, queue);
    }
    if (queue.active < this.#params.nstart) {
      queue.active++;
      return;
    }
    const q = queue;
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        if (this.#running) resolve();
        else reject(new CoapError('STOPPED', 'endpoint stopped'));
      };
      const onAbort = () => {
        const i = q.waiting.indexOf(grant);
        if (i >= 0) q.waiting.splice(i, 1);
        reject(signal.reason instanceof CoapError ? signal.reason : new CoapError('ABORTED', 'aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      q.waiting.push(grant);
    });
  }

  #releaseSlot(key: string): void {
    const queue = this.#slots.get(key);
    if (queue === undefined) return;
    const next = queue.waiting.shift();
    if (next !== undefined) next();
    else if (--queue.active <= 0) this.#slots.delete(key);
  }

  // ---------------------------------------------------------------- receiving

  readonly #onDatagram = (datagram: Buffer, peer: Peer): void => {
    this.#stats.received++;
    if (!this.#running) return;
    let message: CoapMessage;
    try {
      message = decodeMessage(datagram);
    } catch (error) {
      this.#malformed(datagram, peer, error);
      return;
    }
    try {
      this.#dispatch(message, peer, datagram.length);
    } catch (error) {
      // Nothing a peer sends may escape the socket handler (STYLE 6).
      this.#stats.errors++;
      this.#logger?.error({ err: error, peer: formatPeer(peer) }, 'CoAP message handling failed');
    }
  };

  #malformed(datagram: Buffer, peer: Peer, error: unknown): void {
    this.#stats.malformed++;
    if (this.#logger?.isLevelEnabled('debug')) {
      this.#logger.debug({ peer: formatPeer(peer), reason: (error as Error).message, size: datagram.length }, 'malformed CoAP datagram dropped');
    }
    // RFC 7252 4.2: a CON with a format error is rejected with RST, when its message ID can be read.
    if (datagram.length >= 4 && datagram[0]! >> 6 === 1 && ((datagram[0]! >> 4) & 3) === 0) {
      this.#rejectWithReset((datagram[2]! << 8) | datagram[3]!, peer);
    }
  }

  #rejectWithReset(messageId: number, peer: Peer): void {
    this.#stats.rejected++;
    this.#send(encodeMessage(emptyMessage('RST', messageId)), peer);
  }

  #dispatch(message: CoapMessage, peer: Peer, size: number): void {
    const key = peerKey(peer);
    const type = message.type;
    if (type === 'ACK') {
      this.#onAcknowledgement(message, key);
      return;
    }
    if (type === 'RST') {
      if (message.code === EMPTY_CODE) this.#onReset(message, key);
      return;
    }
    if (message.code === EMPTY_CODE) {
      // RFC 7252 4.3: an empty CON is a ping, answered with RST; an empty NON is ignored.
      if (type === 'CON') {
        this.#stats.pings++;
        this.#send(encodeMessage(emptyMessage('RST', message.messageId)), peer);
        if (this.#pingHandler !== undefined) {
          try {
            this.#pingHandler(peer);
          } catch (error) {
            this.#logger?.error({ err: error }, 'CoAP onPing handler failed');
          }
        }
      }
      return;
    }
    const cls = codeClass(message.code);
    if (cls !== 0 && !isResponseCode(message.code)) {
      // RFC 7252 4.2, 4.3: reserved classes 1, 6, 7 are rejected.
      if (type === 'CON') this.#rejectWithReset(message.messageId, peer);
      return;
    }
    const now = Date.now();
    const state = this.#peers.touch(key, now);
    const seen = this.#seen.get(state.seen, message.messageId, now);
    if (seen !== undefined) {
      // RFC 7252 4.5: a duplicate CON gets the same answer; a duplicate NON nothing.
      this.#stats.duplicates++;
      if (type === 'CON') {
        if (seen.reply !== undefined) this.#send(seen.reply, peer);
        else seen.onDuplicate?.();
      }
      return;
    }
    const entry = this.#seen.add(state.seen, message.messageId, now + (type === 'CON' ? this.#times.exchangeLifetime : this.#times.nonLifetime));
    if (cls === 0) this.#onRequest(message, peer, key, state, size, entry, now);
    else this.#onResponse(message, peer, key, entry, now);
  }

  #onAcknowledgement(message: CoapMessage, key: string): void {
    if (message.code !== EMPTY_CODE && !isResponseCode(message.code)) return;
    const midKey = key + '#' + message.messageId;
    const c = this.#confirmables.get(midKey);
    if (c === undefined) return;
    this.#cancelConfirmable(midKey);
    this.#markVerified(key);
    c.onAck(message);
  }

  #onReset(message: CoapMessage, key: string): void {
    this.#stats.resetsReceived++;
    const midKey = key + '#' + message.messageId;
    const c = this.#confirmables.get(midKey);
    if (c !== undefined) {
      this.#cancelConfirmable(midKey);
      this.#markVerified(key);
      c.onFail(new CoapError('RESET', 'peer answered RST'));
      return;
    }
    const n = this.#nonConfirmables.get(midKey);
    if (n !== undefined) {
      this.#nonConfirmables.delete(midKey);
      this.#markVerified(key);
      n.onReset();
    }
  }

  /** A separate response or a notification (CON or NON carrying a response code). */
  #onResponse(message: CoapMessage, peer: Peer, key: string, seen: SeenMessage, now: number): void {
    const token = message.token.toString('hex');
    const entry = this.#tokens.get(token);
    if (entry === undefined && this.#strayNotificationHandler !== undefined && message.token.length > 0 && observe(message) !== undefined && checkOptions(message.options).ok) {
      this.#takeUpNotification(this.#strayNotificationHandler, token, message, peer, key, seen);
      return;
    }
    // RFC 7252 9.1.1: over DTLS a response matches by security association, which may have moved (Connection ID).
    if (entry?.kind === 'observation' && entry.key !== key && this.#transport.sameAssociation?.(entry.peer, peer) === true) {
      entry.peer = peer;
      entry.key = key;
    }
    if (entry === undefined || entry.key !== key || !checkOptions(message.options).ok) {
      // RFC 7252 5.3.2 / RFC 7641 3.6: a response nobody waits for is rejected, which also ends a stale observation.
      seen.reply = encodeMessage(emptyMessage('RST', message.messageId));
      this.#stats.rejected++;
      this.#send(seen.reply, peer);
      if (entry?.kind === 'exchange' && entry.key === key) entry.settle(new CoapError('BAD_RESPONSE', 'response with an unrecognised critical option'));
      return;
    }
    if (message.type === 'CON') {
      seen.reply = encodeMessage(emptyMessage('ACK', message.messageId));
      this.#send(seen.reply, peer);
    }
    this.#markVerified(key);
    if (entry.kind === 'exchange') entry.settle(message);
    else this.#onNotification(entry, message, now);
  }

  /** A notification nobody here waits for: asks whether its observation can be taken up, then handles or rejects it. */
  #takeUpNotification(handler: (token: string, peer: Peer) => Promise<boolean>, token: string, message: CoapMessage, peer: Peer, key: string, seen: SeenMessage): void {
    const reject = (): void => {
      seen.reply = encodeMessage(emptyMessage('RST', message.messageId));
      this.#stats.rejected++;
      this.#send(seen.reply, peer);
    };
    handler(token, peer)
      .then((takenUp) => {
        const entry = this.#tokens.get(token);
        if (!takenUp || entry?.kind !== 'observation' || entry.key !== key) return reject();
        if (message.type === 'CON') {
          seen.reply = encodeMessage(emptyMessage('ACK', message.messageId));
          this.#send(seen.reply, peer);
        }
        this.#markVerified(key);
        this.#onNotification(entry, message, Date.now());
      })
      .catch((error: unknown) => {
        this.#logger?.warn({ err: error, peer: formatPeer(peer) }, 'a notification for an unknown observation could not be looked up');
        reject();
      });
  }

  #onNotification(observation: ClientObservation, message: CoapMessage, now: number): void {
    this.#stats.notificationsReceived++;
    const seq = observe(message);
    if (!isSuccess(message.code) || seq === undefined) {
      // RFC 7641 3.2: an error response, or one without Observe, ends the observation.
      this.#endObservation(observation, `notification ${message.code}${seq === undefined ? ' without Observe' : ''}`);
      this.#deliver(observation, message);
      return;
    }
    if (!isNewerNotification(observation.lastSeq, observation.lastAt, seq, now)) {
      this.#stats.staleNotifications++;
      return;
    }
    observation.lastSeq = seq;
    observation.lastAt = now;
    const block = message.options.some((o) => o.number === OptionNumber.Block2) ? safeBlock(message) : undefined;
    if (block?.more !== true) {
      this.#deliver(observation, message);
      return;
    }
    // RFC 7959 2.6 (with RFC 7641): the rest of a large notification is fetched with plain GETs.
    const ctx = this.#callContext({ maxMessageSize: observation.maxMessageSize, maxBodySize: observation.maxBodySize });
    const send = (r: OutgoingRequest) => this.#exchange(observation.peer, r, ctx, undefined, undefined);
    fetchRemainingBlocks(send, observation.request, message, this.#tokenLength, observation.maxMessageSize, observation.maxBodySize)
      .then((whole) => {
        if (observation.active && observation.lastSeq === seq) this.#deliver(observation, whole);
      })
      .catch((error: unknown) => this.#logger?.debug({ err: error, peer: formatPeer(observation.peer) }, 'CoAP notification body could not be fetched'))
      .finally(() => ctx.dispose());
  }

  #deliver(observation: ClientObservation, message: CoapMessage): void {
    try {
      observation.onNotification(message);
    } catch (error) {
      this.#logger?.error({ err: error }, 'CoAP onNotification failed');
    }
  }

  // ---------------------------------------------------------------- serving requests

  /** `paced`: held back by the rate limit (PACE_MAX_MS) and now served; it is not counted against the rate again. */
  #onRequest(message: CoapMessage, peer: Peer, key: string, state: PeerState, size: number, seen: SeenMessage, now: number, paced = false): void {
    this.#stats.requests++;
    let block1: BlockOption | undefined;
    let block2: BlockOption | undefined;
    let observeValue: number | undefined;
    let size1: number | undefined;
    let noResponse = 0;
    let proxy = false;
    const check = checkOptions(message.options);
    let badBlock = false;
    if (check.ok) {
      for (const o of check.options) {
        const n = o.number;
        if (n < OptionNumber.Block2) {
          if (n === OptionNumber.Observe) observeValue = decodeUint(o.value);
          continue;
        }
        try {
          if (n === OptionNumber.Block2) block2 = decodeBlock(o.value);
          else if (n === OptionNumber.Block1) block1 = decodeBlock(o.value);
        } catch (error) {
          if (!(error instanceof BlockOptionError)) throw error;
          badBlock = true;
        }
        if (n === OptionNumber.Size1) size1 = decodeUint(o.value);
        else if (n === OptionNumber.ProxyUri || n === OptionNumber.ProxyScheme) proxy = true;
        else if (n === OptionNumber.NoResponse) noResponse = decodeUint(o.value);
      }
    }
    const request: CoapMessage = check.ok && check.options !== message.options ? { ...message, options: check.options } : message;
    const exchange: ServerExchange = {
      peer,
      key,
      request,
      requestSize: size,
      seen,
      state,
      block2,
      noResponse,
      block1: undefined,
      requestKey: undefined,
      registering: false,
      separate: false,
      done: false,
      startedAt: 0,
    };
    if (this.#rateLimit !== false && !paced) {
      const wait = takeToken(state, this.#rateLimit, now);
      // A block-wise download asks block after block, one at a time, as fast as the path allows: such a client
      // is held back to the rate (one request per peer at a time) rather than refused, which most clients
      // (libcoap, firmware downloaders) take as the end of the transfer.
      if (wait > 0 && block2 !== undefined && block2.num > 0 && wait <= PACE_MAX_MS && !state.paced && this.#running) {
        state.tokens -= 1;
        state.paced = true;
        this.#stats.paced++;
        this.#stats.requests--;
        const timer = setTimeout(() => {
          this.#pacing.delete(timer);
          state.paced = false;
          if (this.#running) this.#onRequest(message, peer, key, state, size, seen, Date.now(), true);
        }, wait);
        this.#pacing.add(timer);
        return;
      }
      if (wait > 0) {
        this.#stats.rateLimited++;
        this.#answer(exchange, ResponseCode.TooManyRequests, [option(OptionNumber.MaxAge, Math.ceil(wait / 1000))], EMPTY);
        return;
      }
    }
    if (!check.ok) {
      // RFC 7252 5.4.1: an unrecognised (or malformed, 5.4.3; repeated, 5.4.5) critical option.
      this.#stats.badOptions++;
      this.#answer(exchange, ResponseCode.BadOption, [], Buffer.from(`option ${check.badOption}`));
      return;
    }
    if (badBlock) {
      // RFC 7959 2.2: SZX 7 (or an over-long value) is a 4.00.
      this.#answer(exchange, ResponseCode.BadRequest, [], Buffer.from('invalid block option'));
      return;
    }
    if (proxy) {
      this.#answer(exchange, ResponseCode.ProxyingNotSupported, [], EMPTY);
      return;
    }
    let body = request;
    if (block1 !== undefined) {
      exchange.requestKey = requestKey(request);
      const result = this.#block1.accept(key, exchange.requestKey, block1, request.payload, size1, this.#preferredSzx, now);
      if (result.kind === 'continue') {
        this.#answer(exchange, ResponseCode.Continue, [{ number: OptionNumber.Block1, value: encodeBlock(result.block) }], EMPTY);
        return;
      }
      if (result.kind === 'reject') {
        this.#stats.block1Rejected++;
        this.#answer(exchange, result.code, result.size1 === undefined ? [] : [size1Option(result.size1)], Buffer.from(result.reason));
        return;
      }
      exchange.block1 = result.block;
      body = { ...request, options: withoutOptions(request.options, OptionNumber.Block1, OptionNumber.Size1), payload: result.body };
    } else if (request.payload.length > this.#maxBodySize || (size1 !== undefined && size1 > this.#maxBodySize)) {
      this.#answer(exchange, ResponseCode.RequestEntityTooLarge, [size1Option(this.#maxBodySize)], EMPTY);
      return;
    }
    if (block2 !== undefined && block2.num > 0) {
      exchange.requestKey ??= requestKey(request);
      const stored = this.#block2.get(key + '\n' + exchange.requestKey, now);
      if (stored !== undefined) {
        this.#answer(exchange, stored.code, stored.options, stored.payload);
        return;
      }
      // Without the stored body only a safe method can be served again (statelessly) from the handler.
      if (request.code !== Method.GET && request.code !== Method.FETCH) {
        this.#answer(exchange, ResponseCode.RequestEntityIncomplete, [], Buffer.from('block-wise response state expired'));
        return;
      }
    }
    if (observeValue !== undefined && (request.code === Method.GET || request.code === Method.FETCH)) {
      // RFC 7641 4.1: 1 deregisters (then the request is served as usual), 0 registers if the handler agrees.
      if (observeValue === 1) {
        const existing = this.#observers.find(key, request.token);
        if (existing !== undefined) this.#observers.remove(existing.id);
      } else if (observeValue === 0) {
        exchange.registering = true;
      }
    }
    const handler = this.#handler;
    if (handler === undefined) {
      this.#answer(exchange, ResponseCode.NotFound, [], EMPTY);
      return;
    }
    let result: CoapResponse | Promise<CoapResponse>;
    try {
      result = handler(body, peer);
    } catch (error) {
      this.#handlerFailed(exchange, error);
      return;
    }
    if (!isPromise(result)) {
      this.#finish(exchange, result);
      return;
    }
    exchange.startedAt = now;
    this.#pending.add(exchange);
    if (request.type === 'CON') {
      // A retransmitted request while we work: the client is impatient, acknowledge now.
      seen.onDuplicate = () => this.#goSeparate(exchange);
      // One periodic check for all slow requests: a timer per request cost more than the rest of the request.
      this.#slowCheck ??= setInterval(() => this.#guarded(() => this.#checkSlow()), Math.max(5, Math.min(100, this.#separateAfter / 10)));
    }
    result.then(
      (response) => this.#guarded(() => this.#finish(exchange, response)),
      (error: unknown) => this.#guarded(() => this.#handlerFailed(exchange, error)),
    );
  }

  /** Runs work outside the socket handler's try/catch (timers, promise callbacks): nothing may escape. */
  #guarded(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.#stats.errors++;
      this.#logger?.error({ err: error }, 'CoAP exchange handling failed');
    }
  }

  #handlerFailed(exchange: ServerExchange, error: unknown): void {
    this.#stats.handlerErrors++;
    this.#logger?.error({ err: error, peer: formatPeer(exchange.peer) }, 'CoAP request handler failed');
    this.#finish(exchange, { code: ResponseCode.InternalServerError });
  }

  /** Acknowledges CON requests whose handler has run past separateResponseAfter; stops when nothing is pending. */
  #checkSlow(): void {
    const due = Date.now() - this.#separateAfter;
    // The set is in arrival order: stop at the first request that is not due yet.
    for (const exchange of this.#pending) {
      if (exchange.startedAt > due) return;
      if (!exchange.separate && exchange.request.type === 'CON') this.#goSeparate(exchange);
    }
    if (this.#pending.size === 0) {
      clearInterval(this.#slowCheck);
      this.#slowCheck = undefined;
    }
  }

  /** RFC 7252 5.2.2: acknowledge now, respond later in a CON of our own. */
  #goSeparate(exchange: ServerExchange): void {
    if (exchange.done || !this.#running) return;
    if (!exchange.separate) {
      exchange.separate = true;
      this.#stats.separateResponses++;
      exchange.seen.reply = encodeMessage(emptyMessage('ACK', exchange.request.messageId));
      exchange.seen.onDuplicate = undefined;
    }
    this.#send(exchange.seen.reply!, exchange.peer);
  }

  #finish(exchange: ServerExchange, response: CoapResponse): void {
    if (exchange.done) return;
    exchange.done = true;
    exchange.seen.onDuplicate = undefined;
    this.#pending.delete(exchange);
    if (!this.#running) return;
    let code = response.code;
    let options = response.options ?? [];
    let payload: Buffer;
    try {
      if (!isResponseCode(code)) throw new TypeError(`handler answered ${code}, not a response code`);
      payload = toBuffer(response.payload);
    } catch (error) {
      this.#stats.handlerErrors++;
      this.#logger?.error({ err: error }, 'CoAP request handler gave an invalid response');
      code = ResponseCode.InternalServerError;
      options = [];
      payload = EMPTY;
    }
    if (exchange.block1 !== undefined) options = [...options, { number: OptionNumber.Block1, value: encodeBlock(exchange.block1) }];
    if (exchange.registering && isSuccess(code) && response.observe === true) {
      exchange.requestKey ??= requestKey(exchange.request);
      const entry = this.#observers.add(exchange.peer, exchange.key, exchange.request, exchange.requestKey, exchange.requestSize, Date.now());
      if (entry !== undefined) options = [...withoutOptions(options, OptionNumber.Observe), option(OptionNumber.Observe, this.#observers.nextSeq(entry))];
    }
    this.#answer(exchange, code, options, payload, isSuccess(code) ? response.block2 : undefined);
  }

  /** Sends the response to a request: piggy-backed on the ACK, separate CON, or NON; cut to a Block2 block when needed. */
  #answer(exchange: ServerExchange, code: CoapCode, options: readonly CoapOption[], payload: Buffer, cut?: BlockOption): void {
    const request = exchange.request;
    const confirmable = request.type === 'CON';
    if (exchange.noResponse !== 0 && (exchange.noResponse & (NO_RESPONSE_BITS[codeClass(code)] ?? 0)) !== 0) {
      // RFC 7967: no response wanted; a CON still needs its (empty) ACK.
      if (confirmable && !exchange.separate) {
        exchange.seen.reply = encodeMessage(emptyMessage('ACK', request.messageId));
        this.#send(exchange.seen.reply, exchange.peer);
      }
      return;
    }
    const verified = exchange.state.verified || this.#transport.verifiesPeers;
    const limit = this.#limitFor(verified, exchange.requestSize);
    // Block2 concerns representations (2.xx); an error answers with its diagnostic whole (or cut, if ever that long).
    const requested = isSuccess(code) ? exchange.block2 : undefined;
    const fitted: FittedResponse & { readonly stored?: readonly CoapOption[] } = cut !== undefined ? fitBlock(request.token.length, options, payload, cut, limit) : this.#fit(request.token.length, code, options, payload, requested, limit);
    let outOptions: readonly CoapOption[];
    let outPayload: Buffer;
    let outCode = code;
    if (fitted.ok) {
      outOptions = fitted.options;
      outPayload = fitted.payload;
      // Cut under the unverified-peer limit (it may have been cut at maxMessageSize too, in larger blocks).
      if (fitted.block !== undefined && requested === undefined && limit < this.#maxMessageSize) this.#stats.amplificationLimited++;
      if (cut === undefined && fitted.block?.num === 0 && fitted.block.more) {
        exchange.requestKey ??= requestKey(request);
        const stored = fitted.stored ?? withoutOptions(options, OptionNumber.Block2, OptionNumber.Size2);
        this.#block2.set(exchange.key, exchange.key + '\n' + exchange.requestKey, { code, options: withoutOptions(stored, OptionNumber.Observe), payload }, payload.length, Date.now(), 'evict');
      }
    } else {
      // RFC 7959 2.2: a block number past the end of the body.
      outCode = ResponseCode.BadOption;
      outOptions = [];
      outPayload = EMPTY;
    }
    const piggyBacked = confirmable && !exchange.separate;
    const type: MessageType = piggyBacked ? 'ACK' : confirmable ? 'CON' : 'NON';
    const messageId = piggyBacked ? request.messageId : this.#nextMessageId(exchange.key);
    let datagram: Buffer;
    try {
      datagram = encodeMessage({ type, code: outCode, messageId, token: request.token, options: outOptions, payload: outPayload });
    } catch (error) {
      // Options the handler gave that cannot be encoded (an option number or value out of range).
      this.#stats.handlerErrors++;
      this.#logger?.error({ err: error }, 'CoAP response cannot be encoded');
      datagram = encodeMessage({ type, code: ResponseCode.InternalServerError, messageId, token: request.token, options: [], payload: EMPTY });
    }
    if (piggyBacked) {
      exchange.seen.reply = datagram;
      this.#send(datagram, exchange.peer);
    } else if (type === 'CON') {
      const observer = exchange.registering ? this.#observers.find(exchange.key, request.token) : undefined;
      this.#sendConfirmable(exchange.peer, exchange.key + '#' + messageId, datagram, {
        onAck: () => undefined,
        onFail: (error) => {
          // RFC 7641 3.6/4.5: an observer that rejects or never acknowledges the registration's response is dropped.
          if (observer !== undefined) this.#observers.remove(observer.id);
          this.#logger?.debug({ err: error, peer: formatPeer(exchange.peer) }, 'CoAP separate response not acknowledged');
        },
      });
    } else {
      this.#send(datagram, exchange.peer);
    }
  }

  /** The most we send a peer in answer to a request of `requestSize` bytes (RFC 7252 11.3 for unverified peers). */
  #limitFor(verified: boolean, requestSize: number): number {
    if (verified || this.#amplification === false) return this.#maxMessageSize;
    return Math.min(this.#maxMessageSize, this.#amplification * requestSize);
  }

  /** fitResponse, plus an ETag on multi-block 2.05 bodies that lack one so clients can tell a changed representation (RFC 7959 2.4). */
  #fit(
    tokenLength: number,
    code: CoapCode,
    options: readonly CoapOption[],
    payload: Buffer,
    requested: BlockOption | undefined,
    limit: number,
  ): ReturnType<typeof fitResponse> & { readonly stored?: readonly CoapOption[] } {
    const fitted = fitResponse(tokenLength, options, payload, requested, limit, this.#preferredSzx);
    if (!fitted.ok || fitted.block === undefined || !fitted.block.more || fitted.block.num !== 0 || code !== ResponseCode.Content || etag({ options }) !== undefined) {
      return fitted;
    }
    this.#etag = (this.#etag + 1) >>> 0;
    const tagged = [...options, option(OptionNumber.ETag, Buffer.from([this.#etag >>> 24, (this.#etag >>> 16) & 0xff, (this.#etag >>> 8) & 0xff, this.#etag & 0xff]))];
    return { ...fitResponse(tokenLength, tagged, payload, requested, limit, this.#preferredSzx), stored: withoutOptions(tagged, OptionNumber.Block2, OptionNumber.Size2) };
  }

  // ---------------------------------------------------------------- sending

  #send(datagram: Buffer, peer: Peer): void {
    this.#stats.sent++;
    this.#transport.send(datagram, peer);
  }

  /**
   * Sends a CON and retransmits it (RFC 7252 4.2): first after ACK_TIMEOUT × [1, ACK_RANDOM_FACTOR), doubling,
   * MAX_RETRANSMIT times; TIMEOUT after the last wait. `inherit` continues another CON's schedule (RFC 7641 4.5.2).
   */
  #sendConfirmable(
    peer: Peer,
    midKey: string,
    datagram: Buffer,
    handlers: Pick<Confirmable, 'onAck' | 'onFail'>,
    inherit?: { readonly retransmits: number; readonly interval: number },
  ): Confirmable {
    const p = this.#params;
    const c: Confirmable = {
      peer,
      datagram,
      retransmits: inherit?.retransmits ?? 0,
      interval: inherit?.interval ?? p.ackTimeout * (1 + this.#random() * (p.ackRandomFactor - 1)),
      timer: undefined,
      ...handlers,
    };
    this.#confirmables.set(midKey, c);
    this.#send(datagram, peer);
    c.timer = setTimeout(() => this.#guarded(() => this.#retransmit(midKey, c)), c.interval);
    return c;
  }

  #retransmit(midKey: string, c: Confirmable): void {
    if (this.#confirmables.get(midKey) !== c || !this.#running) return;
    if (c.retransmits >= this.#params.maxRetransmit) {
      this.#confirmables.delete(midKey);
      this.#stats.timeouts++;
      c.onFail(new CoapError('TIMEOUT', `no ACK after ${c.retransmits} retransmissions`));
      return;
    }
    c.retransmits++;
    c.interval *= 2;
    this.#stats.retransmissions++;
    this.#send(c.datagram, c.peer);
    c.timer = setTimeout(() => this.#guarded(() => this.#retransmit(midKey, c)), c.interval);
  }

  #cancelConfirmable(midKey: string): void {
    const c = this.#confirmables.get(midKey);
    if (c === undefined) return;
    clearTimeout(c.timer);
    this.#confirmables.delete(midKey);
  }

  #markVerified(key: string): void {
    const state = this.#peers.peek(key) ?? this.#peers.touch(key, Date.now());
    state.verified = true;
  }

  /**
   * The next message ID towards one peer. Per peer, as RFC 7252 4.4 asks ("MUST NOT be re-used (in the
   * communication with the same endpoint) within the EXCHANGE_LIFETIME"): one counter for every peer wrapped
   * around within minutes at a fleet's rate (1,000 devices × a FOTA's ~30 messages), and a device answered a
   * new request from its duplicate cache with the old response (another token).
   */
  #nextMessageId(peerKey: string): number {
    const last = this.#messageIds.get(peerKey);
    const next = last === undefined ? Math.floor(this.#random() * 0x10000) : (last + 1) & 0xffff;
    this.#messageIds.set(peerKey, next);
    if (this.#messageIds.size > this.#maxPeers) this.#messageIds.delete(this.#messageIds.oldest()!.key);
    return next;
  }

  #newToken(): Buffer {
    for (;;) {
      if (this.#tokenPoolOffset + this.#tokenLength > this.#tokenPool.length) {
        this.#tokenPool = randomFillSync(Buffer.allocUnsafe(TOKEN_POOL_SIZE));
        this.#tokenPoolOffset = 0;
      }
      const token = this.#tokenPool.subarray(this.#tokenPoolOffset, this.#tokenPoolOffset + this.#tokenLength);
      this.#tokenPoolOffset += this.#tokenLength;
      if (!this.#tokens.has(token.toString('hex'))) return token;
    }
  }

  #sweep(): void {
    const now = Date.now();
    this.#seen.sweep(now);
    this.#peers.sweep(now);
    this.#block1.sweep(now);
    this.#block2.sweep(now);
    // Same lifetime for all, so insertion order is expiry order.
    for (const [key, n] of this.#nonConfirmables) {
      if (n.expires > now) break;
      this.#nonConfirmables.delete(key);
    }
  }
}

/** A stored large response, served block by block (RFC 7959 2.4). */
interface CoapResponseParts {
  readonly code: CoapCode;
  readonly options: readonly CoapOption[];
  readonly payload: Buffer;
}

function toBuffer(payload: Buffer | string | undefined): Buffer {
  return payload === undefined ? EMPTY : typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
}

function toOutgoing(request: CoapRequest): OutgoingRequest {
  return { code: request.code, options: request.options ?? [], payload: toBuffer(request.payload), confirmable: request.confirmable ?? true };
}

function safeBlock(message: CoapMessage): BlockOption | undefined {
  try {
    const value = message.options.find((o) => o.number === OptionNumber.Block2)?.value;
    return value === undefined ? undefined : decodeBlock(value);
  } catch {
    return undefined;
  }
}
