/**
 * The endpoint's public types: what a request handler answers, what a caller sends and gets back, the
 * constructor's options and the counters. Imported from endpoint.ts (which re-exports them) by everyone else.
 */
import type { Logger } from 'pino';
import type { BlockOption } from './block.js';
import type { Block1Limits } from './block1-assembler.js';
import type { StoreLimits } from './bounded-store.js';
import type { CoapCode, CoapMessage, CoapOption } from './message.js';
import type { ObserverLimits } from './observers.js';
import type { TransmissionParameters } from './parameters.js';
import type { RateLimit } from '../domain/rate-limit.js';
import type { Peer, Transport } from './transport.js';

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
