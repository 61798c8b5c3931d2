/**
 * The client side's requests: one request message and its response at a time per NSTART slot (RFC 7252 4.7),
 * with a fresh token, retransmission, separate responses, and Block1/Block2 around it (RFC 7959). The token
 * table here is what incoming responses are matched against, observations included.
 */
import { randomFillSync } from 'node:crypto';
import { fetchRemainingBlocks, sendWithBlock1, type OutgoingRequest } from './blockwise.js';
import { CallEnd, endedWith } from './call-end.js';
import { CoapError } from './coap-error.js';
import type { CoapRequest, RequestOptions } from './endpoint-types.js';
import { EMPTY_CODE, encodeMessage, isSuccess, type CoapMessage } from './message.js';
import { toBuffer, type EndpointSettings, type MessageLayer } from './message-layer.js';
import { checkOptions, observe } from './options.js';
import type { DerivedTimes, TransmissionParameters } from './parameters.js';
import { peerKey, type Peer } from './transport.js';

export interface ClientExchange {
  readonly kind: 'exchange';
  readonly key: string;
  readonly token: Buffer;
  readonly observation: ClientObservation | undefined;
  /** Settles the request once: a response, or the error that ended it. */
  readonly settle: (result: CoapMessage | CoapError) => void;
}

export interface ClientObservation {
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

export interface CallContext {
  /** Ends the call early: its timeout, its caller's signal. */
  readonly end: CallEnd;
  readonly maxMessageSize: number;
  readonly maxBodySize: number;
  dispose(): void;
}

interface SlotQueue {
  active: number;
  readonly waiting: (() => void)[];
}

/** What awaits a response, by token (hex): a request's exchange, or an observation's notifications. */
export type TokenTable = Map<string, ClientExchange | ClientObservation>;

const TOKEN_POOL_SIZE = 4096;

export function toOutgoing(request: CoapRequest): OutgoingRequest {
  return { code: request.code, options: request.options ?? [], payload: toBuffer(request.payload), confirmable: request.confirmable ?? true };
}

export class OutgoingExchanges {
  readonly tokens: TokenTable = new Map();

  readonly #layer: MessageLayer;
  readonly #params: TransmissionParameters;
  readonly #times: DerivedTimes;
  readonly #requestTimeout: number;
  readonly #maxMessageSize: number;
  readonly #maxBodySize: number;
  readonly #tokenLength: number;
  readonly #slots = new Map<string, SlotQueue>();
  #tokenPool = Buffer.alloc(0);
  #tokenPoolOffset = 0;

  constructor(layer: MessageLayer, settings: EndpointSettings) {
    this.#layer = layer;
    this.#params = layer.params;
    this.#times = layer.times;
    this.#requestTimeout = settings.requestTimeout;
    this.#maxMessageSize = settings.maxMessageSize;
    this.#maxBodySize = settings.maxBodySize;
    this.#tokenLength = settings.tokenLength;
  }

  /** See CoapEndpoint.request. */
  async request(peer: Peer, request: CoapRequest, options: RequestOptions = {}): Promise<CoapMessage> {
    const ctx = this.callContext(options);
    try {
      const outgoing = toOutgoing(request);
      const send = (r: OutgoingRequest) => {
        options.onExchange?.();
        return this.exchange(peer, r, ctx, undefined, undefined);
      };
      const first = await sendWithBlock1(send, outgoing, this.#tokenLength, ctx.maxMessageSize);
      return await fetchRemainingBlocks(send, outgoing, first, this.#tokenLength, ctx.maxMessageSize, ctx.maxBodySize);
    } finally {
      ctx.dispose();
    }
  }

  callContext(options: RequestOptions): CallContext {
    const end = new CallEnd();
    const timeout = options.timeout ?? this.#requestTimeout;
    const timer = setTimeout(() => end.end(new CoapError('TIMEOUT', `no response within ${timeout} ms`)), timeout);
    const outer = options.signal;
    const onAbort = () => end.end(new CoapError('ABORTED', 'request aborted'));
    if (outer?.aborted) onAbort();
    else outer?.addEventListener('abort', onAbort, { once: true });
    return {
      end,
      maxMessageSize: options.maxMessageSize ?? this.#maxMessageSize,
      maxBodySize: options.maxBodySize ?? this.#maxBodySize,
      dispose: () => {
        clearTimeout(timer);
        outer?.removeEventListener('abort', onAbort);
      },
    };
  }

  /** One request message and its response: NSTART slot, token, retransmission, separate response. */
  async exchange(peer: Peer, request: OutgoingRequest, ctx: CallContext, observation: ClientObservation | undefined, fixedToken: Buffer | undefined): Promise<CoapMessage> {
    if (!this.#layer.running) throw new CoapError('STOPPED', 'endpoint not running');
    const key = peerKey(peer);
    await this.#acquireSlot(key, ctx.end);
    let held = true;
    const release = () => {
      if (held) {
        held = false;
        this.#releaseSlot(key);
      }
    };
    try {
      return await new Promise<CoapMessage>((resolve, reject) => {
        if (!this.#layer.running) throw new CoapError('STOPPED', 'endpoint stopped');
        const token = fixedToken ?? this.#newToken();
        const tokenKey = token.toString('hex');
        const messageId = this.#layer.nextMessageId(key);
        const midKey = key + '#' + messageId;
        let datagram: Buffer;
        try {
          datagram = encodeMessage({ type: request.confirmable ? 'CON' : 'NON', code: request.code, messageId, token, options: request.options, payload: request.payload });
        } catch (error) {
          throw new CoapError('TOO_LARGE', (error as Error).message);
        }
        let settled = false;
        const onAbort = () => exchange.settle(endedWith(ctx.end));
        const exchange: ClientExchange = {
          kind: 'exchange',
          key,
          token,
          observation,
          settle: (result) => {
            if (settled) return;
            settled = true;
            ctx.end.off(onAbort);
            if (this.tokens.get(tokenKey) === exchange) this.tokens.delete(tokenKey);
            this.#layer.cancelConfirmable(midKey);
            this.#layer.nonConfirmables.delete(midKey);
            release();
            if (result instanceof CoapError) {
              reject(result);
              return;
            }
            // RFC 7641 3.1: the server accepted the registration when its 2.xx response carries Observe.
            if (observation !== undefined && isSuccess(result.code) && observe(result) !== undefined && this.#layer.running) {
              observation.token = token;
              observation.tokenKey = tokenKey;
              observation.lastSeq = observe(result)!;
              observation.lastAt = Date.now();
              observation.active = true;
              this.tokens.set(tokenKey, observation);
            }
            resolve(result);
          },
        };
        if (ctx.end.reason) {
          onAbort();
          return;
        }
        ctx.end.on(onAbort);
        this.tokens.set(tokenKey, exchange);
        if (request.confirmable) {
          this.#layer.sendConfirmable(peer, midKey, datagram, {
            onAck: (ack) => {
              // RFC 7252 4.7: an acknowledged request no longer counts against NSTART.
              release();
              if (ack.code === EMPTY_CODE) return; // a separate response follows (5.2.2)
              this.#deliverResponse(exchange, ack);
            },
            onFail: (error) => exchange.settle(error),
          });
        } else {
          this.#layer.nonConfirmables.set(midKey, {
            expires: Date.now() + this.#times.nonLifetime,
            onReset: () => exchange.settle(new CoapError('RESET', 'peer answered RST')),
          });
          this.#layer.send(datagram, peer);
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

  #acquireSlot(key: string, end: CallEnd): Promise<void> | void {
    if (end.reason) throw end.reason;
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
        end.off(onAbort);
        if (this.#layer.running) resolve();
        else reject(new CoapError('STOPPED', 'endpoint stopped'));
      };
      const onAbort = () => {
        const i = q.waiting.indexOf(grant);
        if (i >= 0) q.waiting.splice(i, 1);
        reject(endedWith(end));
      };
      end.on(onAbort);
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

  #newToken(): Buffer {
    for (;;) {
      if (this.#tokenPoolOffset + this.#tokenLength > this.#tokenPool.length) {
        this.#tokenPool = randomFillSync(Buffer.allocUnsafe(TOKEN_POOL_SIZE));
        this.#tokenPoolOffset = 0;
      }
      const token = this.#tokenPool.subarray(this.#tokenPoolOffset, this.#tokenPoolOffset + this.#tokenLength);
      this.#tokenPoolOffset += this.#tokenLength;
      if (!this.tokens.has(token.toString('hex'))) return token;
    }
  }

  /** At stop(): requests waiting for a slot are let go (and fail with STOPPED). */
  releaseWaiting(): void {
    for (const queue of this.#slots.values()) for (const grant of queue.waiting) grant();
    this.#slots.clear();
  }
}
