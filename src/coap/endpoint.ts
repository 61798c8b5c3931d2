/**
 * CoapEndpoint: the CoAP message layer (RFC 7252 4) over a Transport, serving requests and sending them,
 * with Observe (RFC 7641) and block-wise transfers (RFC 7959) on both sides, and bounds against abuse.
 * It knows nothing of LwM2M or the platform: handlers and callers bring the meaning.
 *
 * This class is the facade: it resolves the options, owns the bounded tables, and starts and stops the parts,
 * which share one MessageLayer (sending, retransmission, message IDs, peers, counters):
 * DatagramReceiver (decode, de-duplicate, dispatch), IncomingRequests and ServerResponses (the server side),
 * OutgoingExchanges and ClientObservations (the client side).
 */
import { MAX_SZX, szxFor } from './block.js';
import { Block1Assembler, type Block1Limits } from './block1-assembler.js';
import { BoundedStore } from './bounded-store.js';
import { ClientObservations } from './client-observations.js';
import { CoapError } from './coap-error.js';
import { DatagramReceiver } from './datagram-receiver.js';
import { MessageIdCache } from './dedup.js';
import type {
  CoapEndpointOptions,
  CoapRequest,
  CoapResponse,
  CoapStats,
  CoapTableSizes,
  NotifyOptions,
  Observation,
  ObserveOptions,
  RequestHandler,
  RequestOptions,
} from './endpoint-types.js';
import { IncomingRequests } from './incoming-requests.js';
import type { CoapMessage } from './message.js';
import { MessageLayer, type EndpointSettings } from './message-layer.js';
import { ObserverRegistry, type Observer } from './observers.js';
import { OutgoingExchanges } from './outgoing-exchanges.js';
import { DEFAULT_TRANSMISSION, deriveTimes } from './parameters.js';
import { PeerTable } from './peers.js';
import { ServerResponses, type CoapResponseParts } from './server-responses.js';
import { UdpTransport, type BoundAddress, type Peer, type Transport } from './transport.js';

// The public types live beside the front; importers keep naming them from here.
export type * from './endpoint-types.js';

const HOUSEKEEPING_INTERVAL = 1000;

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
  readonly #layer: MessageLayer;
  readonly #stats: CoapStats;
  readonly #block1: Block1Assembler;
  readonly #block2: BoundedStore<CoapResponseParts>;
  readonly #observers: ObserverRegistry;
  readonly #receiver: DatagramReceiver;
  readonly #requests: IncomingRequests;
  readonly #responses: ServerResponses;
  readonly #exchanges: OutgoingExchanges;
  readonly #observations: ClientObservations;
  #housekeeping: NodeJS.Timeout | undefined;

  constructor(options: CoapEndpointOptions = {}) {
    this.#transport = options.transport ?? new UdpTransport({ host: options.host, port: options.port, logger: options.logger });
    const params = { ...DEFAULT_TRANSMISSION, ...options.transmission };
    const maxPeers = options.maxPeers ?? 100_000;
    const times = deriveTimes(params);
    const rateLimit = options.rateLimit ?? { rate: 100, burst: 200 };
    const block1: Block1Limits = {
      maxBodySize: 1 << 20,
      maxEntriesPerOwner: 4,
      maxEntries: 1000,
      maxBytes: 64 << 20,
      lifetime: 60_000,
      ...options.block1,
    };
    const settings: EndpointSettings = {
      separateAfter: options.separateResponseAfter ?? 1000,
      requestTimeout: options.requestTimeout ?? times.maxTransmitWait,
      maxMessageSize: options.maxMessageSize ?? 1152,
      preferredSzx: Math.min(MAX_SZX, szxFor(options.preferredBlockSize ?? 1024)),
      tokenLength: Math.max(1, Math.min(8, options.tokenLength ?? 8)),
      rateLimit,
      amplification: options.amplificationFactor ?? 3,
      maxBodySize: block1.maxBodySize,
    };
    this.#layer = new MessageLayer({
      transport: this.#transport,
      logger: options.logger,
      params,
      times,
      random: options.random ?? Math.random,
      seen: new MessageIdCache(options.dedupCapacity ?? 20_000),
      peers: new PeerTable(maxPeers, options.peerIdleTimeout ?? 3_600_000, rateLimit ? rateLimit.burst : 0),
      maxPeers,
    });
    this.#stats = this.#layer.stats;
    this.#block1 = new Block1Assembler(block1);
    this.#block2 = new BoundedStore({ maxEntriesPerOwner: 4, maxEntries: 1000, maxBytes: 64 << 20, lifetime: 60_000, ...options.block2 });
    this.#observers = new ObserverRegistry({ maxObservers: 100_000, maxObserversPerPeer: 64, ...options.observers });
    this.#responses = new ServerResponses(this.#layer, settings, this.#observers, this.#block2);
    this.#requests = new IncomingRequests(this.#layer, settings, this.#responses, this.#observers, this.#block1, this.#block2);
    this.#exchanges = new OutgoingExchanges(this.#layer, settings);
    this.#observations = new ClientObservations(this.#layer, settings, this.#exchanges);
    this.#receiver = new DatagramReceiver(this.#layer, this.#requests, this.#observations, this.#exchanges.tokens);
  }

  // ---------------------------------------------------------------- lifecycle

  async start(): Promise<void> {
    if (this.#layer.running) return;
    await this.#transport.start(this.#receiver.onDatagram);
    this.#layer.running = true;
    this.#housekeeping = setInterval(() => this.#sweep(), HOUSEKEEPING_INTERVAL);
    this.#housekeeping.unref();
  }

  /** Stops: pending requests and observations fail with STOPPED, nothing more is sent, the transport closes. */
  async stop(): Promise<void> {
    if (!this.#layer.running) return;
    this.#layer.running = false;
    clearInterval(this.#housekeeping);
    this.#requests.stop();
    const stopped = new CoapError('STOPPED', 'endpoint stopped');
    this.#layer.failConfirmables(stopped);
    this.#observations.settleAll(stopped);
    this.#exchanges.releaseWaiting();
    this.#layer.nonConfirmables.clear();
    this.#observers.clear();
    this.#layer.seen.clear();
    this.#block1.clear();
    this.#block2.clear();
    this.#layer.peers.clear();
    await this.#transport.stop();
  }

  /** Where the endpoint listens (after start()). */
  address(): BoundAddress {
    return this.#transport.address();
  }

  // ---------------------------------------------------------------- hooks

  /** The one request handler; without one, requests get 4.04. */
  onRequest(handler: RequestHandler): void {
    this.#requests.handler = handler;
  }

  /** Called for each CoAP ping (empty CON, answered with RST, RFC 7252 4.3): a sign of life for keep-alive. */
  onPing(handler: (peer: Peer) => void): void {
    this.#receiver.pingHandler = handler;
  }

  /**
   * Asked before a notification (a response with Observe) whose token no observation here has is rejected: it may
   * belong to an observation this endpoint should take up (a cluster node taking over another node's device).
   * Resolving true means an observation with that token from that peer exists now; the notification is then
   * acknowledged and delivered to it. Otherwise it is rejected with RST as usual.
   */
  onStrayNotification(handler: (token: string, peer: Peer) => Promise<boolean>): void {
    this.#receiver.strayNotificationHandler = handler;
  }

  stats(): CoapStats & CoapTableSizes {
    return {
      ...this.#stats,
      peers: this.#layer.peers.size,
      dedupEntries: this.#layer.seen.size,
      block1Transfers: this.#block1.transfers,
      block1Bytes: this.#block1.bufferedBytes,
      block2Entries: this.#block2.size,
      observers: this.#observers.size,
      observations: [...this.#exchanges.tokens.values()].filter((t) => t.kind === 'observation').length,
      outstanding: this.#layer.confirmables.size,
    };
  }

  /** Marks a peer as having proven its address (e.g. authenticated by the application), lifting RFC 7252 11.3 limits. */
  verifyPeer(peer: Peer): void {
    this.#layer.verifyPeer(peer);
  }

  isVerified(peer: Peer): boolean {
    return this.#layer.isVerified(peer);
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
    return this.#responses.notify(observer, response, options);
  }

  // ---------------------------------------------------------------- client side

  /**
   * Sends a request and resolves with its response (the whole body: Block1 and Block2 are handled). CON by
   * default, retransmitted per RFC 7252 4.2; at most NSTART outstanding per peer, the rest queued. Rejects with
   * CoapError: TIMEOUT, RESET, ABORTED, STOPPED, BLOCKWISE, TOO_LARGE, BAD_RESPONSE. Error responses (4.xx,
   * 5.xx) resolve: they are answers.
   */
  request(peer: Peer, request: CoapRequest, options: RequestOptions = {}): Promise<CoapMessage> {
    return this.#exchanges.request(peer, request, options);
  }

  /**
   * Registers an observation (RFC 7641 3.1: the request with Observe: 0) and resolves once the server has
   * answered. Later notifications reach `onNotification` in order (RFC 7641 3.4: older ones are dropped),
   * with their whole body; CON notifications are acknowledged.
   */
  observe(peer: Peer, request: CoapRequest, onNotification: (notification: CoapMessage) => void, options: ObserveOptions = {}): Promise<Observation> {
    return this.#observations.observe(peer, request, onNotification, options);
  }

  /**
   * Takes up an observation made before (by another process, or before a restart): nothing is sent; the
   * notifications `peer` sends with `token` are delivered from now on, and the observation can be cancelled as
   * usual (`request` is what the registration asked, for the deregistration and block-wise bodies). `response`
   * of the result is an empty 2.05: the registration's answer was had back then.
   */
  resumeObservation(peer: Peer, token: Buffer, request: CoapRequest, onNotification: (notification: CoapMessage) => void, options: { onEnd?: ObserveOptions['onEnd'] } = {}): Observation {
    return this.#observations.resumeObservation(peer, token, request, onNotification, options);
  }

  #sweep(): void {
    const now = Date.now();
    this.#layer.seen.sweep(now);
    this.#layer.peers.sweep(now);
    this.#block1.sweep(now);
    this.#block2.sweep(now);
    this.#layer.expireNonConfirmables(now);
  }
}
