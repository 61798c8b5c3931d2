/**
 * What the server side sends: the response to a request (piggy-backed on the ACK, separate CON, or NON) and
 * notifications to observers (RFC 7641 4.2). Both are bounded for unverified peers (RFC 7252 11.3) and cut to
 * Block2 blocks when large, the rest kept for the follow-up requests (RFC 7959 2.4).
 */
import type { Logger } from 'pino';
import type { BlockOption } from './block.js';
import { fitBlock, fitResponse, requestKey, type FittedResponse } from './blockwise.js';
import type { BoundedStore } from './bounded-store.js';
import { CoapError } from './coap-error.js';
import type { SeenMessage } from './dedup.js';
import type { CoapResponse, CoapStats, NotifyOptions } from './endpoint-types.js';
import { codeClass, emptyMessage, encodeMessage, isResponseCode, isSuccess, ResponseCode, type CoapCode, type CoapMessage, type CoapOption, type MessageType } from './message.js';
import { EMPTY, toBuffer, type EndpointSettings, type MessageLayer } from './message-layer.js';
import type { Observer, ObserverRegistry } from './observers.js';
import { etag, OptionNumber, option, withoutOptions } from './options.js';
import type { PeerState } from './peers.js';
import { formatPeer, type Peer, type Transport } from './transport.js';

/** A request being served. */
export interface ServerExchange {
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

/** A stored large response, served block by block (RFC 7959 2.4). */
export interface CoapResponseParts {
  readonly code: CoapCode;
  readonly options: readonly CoapOption[];
  readonly payload: Buffer;
}

/** RFC 7967: the No-Response bits that suppress 2.xx (2), 4.xx (8) and 5.xx (16) responses. */
const NO_RESPONSE_BITS: Readonly<Record<number, number>> = { 2: 2, 4: 8, 5: 16 };

export class ServerResponses {
  readonly #layer: MessageLayer;
  readonly #stats: CoapStats;
  readonly #logger: Logger | undefined;
  readonly #transport: Transport;
  readonly #observers: ObserverRegistry;
  readonly #block2: BoundedStore<CoapResponseParts>;
  readonly #maxMessageSize: number;
  readonly #preferredSzx: number;
  readonly #amplification: number | false;
  #etag: number;

  constructor(layer: MessageLayer, settings: EndpointSettings, observers: ObserverRegistry, block2: BoundedStore<CoapResponseParts>) {
    this.#layer = layer;
    this.#stats = layer.stats;
    this.#logger = layer.logger;
    this.#transport = layer.transport;
    this.#observers = observers;
    this.#block2 = block2;
    this.#maxMessageSize = settings.maxMessageSize;
    this.#preferredSzx = settings.preferredSzx;
    this.#amplification = settings.amplification;
    this.#etag = Math.floor(layer.random() * 0x100000000);
  }

  /** See CoapEndpoint.notify. */
  notify(observer: Observer | string, response: CoapResponse, options: NotifyOptions = {}): Promise<void> {
    const entry = this.#observers.get(typeof observer === 'string' ? observer : observer.id);
    if (entry === undefined || !this.#layer.running) return Promise.reject(new CoapError('NO_OBSERVER', 'no such observer'));
    if (!isResponseCode(response.code)) return Promise.reject(new TypeError(`a notification needs a response code, not ${response.code}`));
    const final = !isSuccess(response.code);
    let responseOptions = withoutOptions(response.options ?? [], OptionNumber.Observe);
    const payload = toBuffer(response.payload);
    const verified = this.#layer.isVerified(entry.peer);
    const limit = this.#limitFor(verified, entry.requestSize);
    const stored = responseOptions;
    if (!final) responseOptions = [...responseOptions, option(OptionNumber.Observe, this.#observers.nextSeq(entry))];
    const fitted = this.#fit(entry.token.length, response.code, responseOptions, payload, undefined, limit);
    if (!fitted.ok) return Promise.reject(new CoapError('TOO_LARGE', 'notification cannot be encoded'));
    if (fitted.block?.more) {
      this.#block2.set(entry.peerKey, entry.peerKey + '\n' + entry.requestKey, { code: response.code, options: withoutOptions(fitted.stored ?? stored, OptionNumber.Observe), payload }, payload.length, Date.now(), 'evict');
    }
    const confirmable = options.confirmable === true || !verified;
    const messageId = this.#layer.nextMessageId(entry.peerKey);
    let datagram: Buffer;
    try {
      datagram = encodeMessage({ type: confirmable ? 'CON' : 'NON', code: response.code, messageId, token: entry.token, options: fitted.options, payload: fitted.payload });
    } catch (error) {
      return Promise.reject(new CoapError('TOO_LARGE', `notification cannot be encoded: ${(error as Error).message}`));
    }
    this.#stats.notificationsSent++;
    if (final) this.#observers.remove(entry.id);
    if (!confirmable) {
      this.#layer.nonConfirmables.set(entry.peerKey + '#' + messageId, { expires: Date.now() + this.#layer.times.nonLifetime, onReset: () => this.#observers.remove(entry.id) });
      this.#layer.send(datagram, entry.peer);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const inherited = entry.inFlight?.cancel();
      const midKey = entry.peerKey + '#' + messageId;
      const c = this.#layer.sendConfirmable(
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
          this.#layer.cancelConfirmable(midKey);
          resolve();
          return { retransmits: c.retransmits, interval: c.interval };
        },
      };
      if (!final) entry.inFlight = inFlight;
    });
  }

  /** Sends the response to a request: piggy-backed on the ACK, separate CON, or NON; cut to a Block2 block when needed. */
  answer(exchange: ServerExchange, code: CoapCode, options: readonly CoapOption[], payload: Buffer, cut?: BlockOption): void {
    const request = exchange.request;
    const confirmable = request.type === 'CON';
    if (exchange.noResponse !== 0 && (exchange.noResponse & (NO_RESPONSE_BITS[codeClass(code)] ?? 0)) !== 0) {
      // RFC 7967: no response wanted; a CON still needs its (empty) ACK.
      if (confirmable && !exchange.separate) {
        exchange.seen.reply = encodeMessage(emptyMessage('ACK', request.messageId));
        this.#layer.send(exchange.seen.reply, exchange.peer);
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
    const messageId = piggyBacked ? request.messageId : this.#layer.nextMessageId(exchange.key);
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
      this.#layer.send(datagram, exchange.peer);
    } else if (type === 'CON') {
      const observer = exchange.registering ? this.#observers.find(exchange.key, request.token) : undefined;
      this.#layer.sendConfirmable(exchange.peer, exchange.key + '#' + messageId, datagram, {
        onAck: () => undefined,
        onFail: (error) => {
          // RFC 7641 3.6/4.5: an observer that rejects or never acknowledges the registration's response is dropped.
          if (observer !== undefined) this.#observers.remove(observer.id);
          this.#logger?.debug({ err: error, peer: formatPeer(exchange.peer) }, 'CoAP separate response not acknowledged');
        },
      });
    } else {
      this.#layer.send(datagram, exchange.peer);
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
}
