/**
 * The server side's intake: a request from its options to the handler's answer. Rate limit (and pacing of
 * block-wise downloads), option checks, Block1 reassembly, Block2 follow-ups from the stored body, Observe
 * registration, and the switch to a separate response when the handler is slow (RFC 7252 5.2.2). Sending the
 * answer is ServerResponses'.
 */
import type { Logger } from 'pino';
import { BlockOptionError, decodeBlock, encodeBlock, type BlockOption } from './block.js';
import type { Block1Assembler } from './block1-assembler.js';
import { requestKey, size1Option } from './blockwise.js';
import type { BoundedStore } from './bounded-store.js';
import type { SeenMessage } from './dedup.js';
import type { CoapResponse, CoapStats, RequestHandler } from './endpoint-types.js';
import { emptyMessage, encodeMessage, isResponseCode, isSuccess, Method, ResponseCode, type CoapMessage } from './message.js';
import { EMPTY, toBuffer, type EndpointSettings, type MessageLayer } from './message-layer.js';
import type { ObserverRegistry } from './observers.js';
import { checkOptions, decodeUint, OptionNumber, option, withoutOptions } from './options.js';
import type { PeerState } from './peers.js';
import { takeToken, type RateLimit } from '../domain/rate-limit.js';
import type { CoapResponseParts, ServerExchange, ServerResponses } from './server-responses.js';
import { formatPeer, type Peer } from './transport.js';

/**
 * The longest a block-wise continuation request (Block2 NUM > 0) is held back to the rate limit before it is
 * refused with 4.29: well under a client's ACK_TIMEOUT (2 s), so it waits without retransmitting.
 */
const PACE_MAX_MS = 500;

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> => typeof (value as { then?: unknown } | null)?.then === 'function';

export class IncomingRequests {
  /** The one request handler (CoapEndpoint.onRequest); without one, requests get 4.04. */
  handler: RequestHandler | undefined;

  readonly #layer: MessageLayer;
  readonly #stats: CoapStats;
  readonly #logger: Logger | undefined;
  readonly #responses: ServerResponses;
  readonly #observers: ObserverRegistry;
  readonly #block1: Block1Assembler;
  readonly #block2: BoundedStore<CoapResponseParts>;
  readonly #rateLimit: RateLimit | false;
  readonly #separateAfter: number;
  readonly #preferredSzx: number;
  readonly #maxBodySize: number;

  /** Requests whose handler answers asynchronously, in arrival order. */
  readonly #pending = new Set<ServerExchange>();
  /** Timers of block-wise requests held back to the rate limit. */
  readonly #pacing = new Set<NodeJS.Timeout>();
  #slowCheck: NodeJS.Timeout | undefined;

  constructor(
    layer: MessageLayer,
    settings: EndpointSettings,
    responses: ServerResponses,
    observers: ObserverRegistry,
    block1: Block1Assembler,
    block2: BoundedStore<CoapResponseParts>,
  ) {
    this.#layer = layer;
    this.#stats = layer.stats;
    this.#logger = layer.logger;
    this.#responses = responses;
    this.#observers = observers;
    this.#block1 = block1;
    this.#block2 = block2;
    this.#rateLimit = settings.rateLimit;
    this.#separateAfter = settings.separateAfter;
    this.#preferredSzx = settings.preferredSzx;
    this.#maxBodySize = settings.maxBodySize;
  }

  /** At stop(): no held-back request is served, no pending answer sent. */
  stop(): void {
    for (const timer of this.#pacing) clearTimeout(timer);
    this.#pacing.clear();
    for (const exchange of this.#pending) exchange.done = true;
    this.#pending.clear();
    clearInterval(this.#slowCheck);
    this.#slowCheck = undefined;
  }

  /** `paced`: held back by the rate limit (PACE_MAX_MS) and now served; it is not counted against the rate again. */
  onRequest(message: CoapMessage, peer: Peer, key: string, state: PeerState, size: number, seen: SeenMessage, now: number, paced = false): void {
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
      if (wait > 0 && block2 !== undefined && block2.num > 0 && wait <= PACE_MAX_MS && !state.paced && this.#layer.running) {
        state.tokens -= 1;
        state.paced = true;
        this.#stats.paced++;
        this.#stats.requests--;
        const timer = setTimeout(() => {
          this.#pacing.delete(timer);
          state.paced = false;
          if (this.#layer.running) this.onRequest(message, peer, key, state, size, seen, Date.now(), true);
        }, wait);
        this.#pacing.add(timer);
        return;
      }
      if (wait > 0) {
        this.#stats.rateLimited++;
        this.#responses.answer(exchange, ResponseCode.TooManyRequests, [option(OptionNumber.MaxAge, Math.ceil(wait / 1000))], EMPTY);
        return;
      }
    }
    if (!check.ok) {
      // RFC 7252 5.4.1: an unrecognised (or malformed, 5.4.3; repeated, 5.4.5) critical option.
      this.#stats.badOptions++;
      this.#responses.answer(exchange, ResponseCode.BadOption, [], Buffer.from(`option ${check.badOption}`));
      return;
    }
    if (badBlock) {
      // RFC 7959 2.2: SZX 7 (or an over-long value) is a 4.00.
      this.#responses.answer(exchange, ResponseCode.BadRequest, [], Buffer.from('invalid block option'));
      return;
    }
    if (proxy) {
      this.#responses.answer(exchange, ResponseCode.ProxyingNotSupported, [], EMPTY);
      return;
    }
    let body = request;
    if (block1 !== undefined) {
      exchange.requestKey = requestKey(request);
      const result = this.#block1.accept(key, exchange.requestKey, block1, request.payload, size1, this.#preferredSzx, now);
      if (result.kind === 'continue') {
        this.#responses.answer(exchange, ResponseCode.Continue, [{ number: OptionNumber.Block1, value: encodeBlock(result.block) }], EMPTY);
        return;
      }
      if (result.kind === 'reject') {
        this.#stats.block1Rejected++;
        this.#responses.answer(exchange, result.code, result.size1 === undefined ? [] : [size1Option(result.size1)], Buffer.from(result.reason));
        return;
      }
      exchange.block1 = result.block;
      body = { ...request, options: withoutOptions(request.options, OptionNumber.Block1, OptionNumber.Size1), payload: result.body };
    } else if (request.payload.length > this.#maxBodySize || (size1 !== undefined && size1 > this.#maxBodySize)) {
      this.#responses.answer(exchange, ResponseCode.RequestEntityTooLarge, [size1Option(this.#maxBodySize)], EMPTY);
      return;
    }
    if (block2 !== undefined && block2.num > 0) {
      exchange.requestKey ??= requestKey(request);
      const stored = this.#block2.get(key + '\n' + exchange.requestKey, now);
      if (stored !== undefined) {
        this.#responses.answer(exchange, stored.code, stored.options, stored.payload);
        return;
      }
      // Without the stored body only a safe method can be served again (statelessly) from the handler.
      if (request.code !== Method.GET && request.code !== Method.FETCH) {
        this.#responses.answer(exchange, ResponseCode.RequestEntityIncomplete, [], Buffer.from('block-wise response state expired'));
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
    const handler = this.handler;
    if (handler === undefined) {
      this.#responses.answer(exchange, ResponseCode.NotFound, [], EMPTY);
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
      this.#slowCheck ??= setInterval(() => this.#layer.guarded(() => this.#checkSlow()), Math.max(5, Math.min(100, this.#separateAfter / 10)));
    }
    result.then(
      (response) => this.#layer.guarded(() => this.#finish(exchange, response)),
      (error: unknown) => this.#layer.guarded(() => this.#handlerFailed(exchange, error)),
    );
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
    if (exchange.done || !this.#layer.running) return;
    if (!exchange.separate) {
      exchange.separate = true;
      this.#stats.separateResponses++;
      exchange.seen.reply = encodeMessage(emptyMessage('ACK', exchange.request.messageId));
      exchange.seen.onDuplicate = undefined;
    }
    this.#layer.send(exchange.seen.reply!, exchange.peer);
  }

  #finish(exchange: ServerExchange, response: CoapResponse): void {
    if (exchange.done) return;
    exchange.done = true;
    exchange.seen.onDuplicate = undefined;
    this.#pending.delete(exchange);
    if (!this.#layer.running) return;
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
    this.#responses.answer(exchange, code, options, payload, isSuccess(code) ? response.block2 : undefined);
  }
}
