/**
 * The client side of Observe (RFC 7641 3): registering, taking up an observation made elsewhere, cancelling,
 * and the notifications received for it (in order, whole bodies fetched block-wise). Each message goes through
 * OutgoingExchanges; an observation sits in its token table while it is active.
 */
import type { Logger } from 'pino';
import { decodeBlock, type BlockOption } from './block.js';
import { fetchRemainingBlocks, type OutgoingRequest } from './blockwise.js';
import type { CoapError } from './coap-error.js';
import type { SeenMessage } from './dedup.js';
import type { CoapRequest, CoapStats, ObserveOptions, Observation } from './endpoint-types.js';
import { emptyMessage, encodeMessage, isSuccess, type CoapMessage } from './message.js';
import { EMPTY, type EndpointSettings, type MessageLayer } from './message-layer.js';
import { isNewerNotification } from './observers.js';
import { observe, OptionNumber, withOption, withoutOptions } from './options.js';
import { toOutgoing, type ClientObservation, type OutgoingExchanges, type TokenTable } from './outgoing-exchanges.js';
import { formatPeer, peerKey, type Peer } from './transport.js';

export class ClientObservations {
  readonly #layer: MessageLayer;
  readonly #stats: CoapStats;
  readonly #logger: Logger | undefined;
  readonly #exchanges: OutgoingExchanges;
  readonly #tokens: TokenTable;
  readonly #tokenLength: number;
  readonly #maxMessageSize: number;
  readonly #maxBodySize: number;

  constructor(layer: MessageLayer, settings: EndpointSettings, exchanges: OutgoingExchanges) {
    this.#layer = layer;
    this.#stats = layer.stats;
    this.#logger = layer.logger;
    this.#exchanges = exchanges;
    this.#tokens = exchanges.tokens;
    this.#tokenLength = settings.tokenLength;
    this.#maxMessageSize = settings.maxMessageSize;
    this.#maxBodySize = settings.maxBodySize;
  }

  /** See CoapEndpoint.observe. */
  async observe(peer: Peer, request: CoapRequest, onNotification: (notification: CoapMessage) => void, options: ObserveOptions = {}): Promise<Observation> {
    const ctx = this.#exchanges.callContext(options);
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
      const first = await this.#exchanges.exchange(peer, outgoing, ctx, observation, undefined);
      const send = (r: OutgoingRequest) => this.#exchanges.exchange(peer, r, ctx, undefined, undefined);
      let response = first;
      try {
        response = await fetchRemainingBlocks(send, observation.request, first, this.#tokenLength, ctx.maxMessageSize, ctx.maxBodySize);
      } catch (error) {
        this.endObservation(observation, 'registration body could not be fetched');
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

  /** See CoapEndpoint.resumeObservation. */
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
      active: this.#layer.running,
    };
    if (this.#layer.running) this.#tokens.set(tokenKey, observation);
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
    this.endObservation(observation, undefined);
    if (!proactive || !wasActive) return undefined;
    const ctx = this.#exchanges.callContext({ timeout });
    try {
      const request = { ...observation.request, options: withOption(observation.request.options, OptionNumber.Observe, 1) };
      // RFC 7641 3.6: the deregistration carries the observation's token.
      return await this.#exchanges.exchange(observation.peer, request, ctx, undefined, observation.token);
    } catch (error) {
      this.#logger?.debug({ err: error, peer: formatPeer(observation.peer) }, 'CoAP observe deregistration failed');
      return undefined;
    } finally {
      ctx.dispose();
    }
  }

  endObservation(observation: ClientObservation, reason: string | undefined): void {
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

  /** At stop(): pending requests fail with `stopped`, observations end. */
  settleAll(stopped: CoapError): void {
    for (const entry of [...this.#tokens.values()]) {
      if (entry.kind === 'exchange') entry.settle(stopped);
      else this.endObservation(entry, 'endpoint stopped');
    }
  }

  /** A notification nobody here waits for: asks whether its observation can be taken up, then handles or rejects it. */
  takeUpNotification(handler: (token: string, peer: Peer) => Promise<boolean>, token: string, message: CoapMessage, peer: Peer, key: string, seen: SeenMessage): void {
    const reject = (): void => {
      seen.reply = encodeMessage(emptyMessage('RST', message.messageId));
      this.#stats.rejected++;
      this.#layer.send(seen.reply, peer);
    };
    handler(token, peer)
      .then((takenUp) => {
        const entry = this.#tokens.get(token);
        if (!takenUp || entry?.kind !== 'observation' || entry.key !== key) return reject();
        if (message.type === 'CON') {
          seen.reply = encodeMessage(emptyMessage('ACK', message.messageId));
          this.#layer.send(seen.reply, peer);
        }
        this.#layer.markVerified(key);
        this.onNotification(entry, message, Date.now());
      })
      .catch((error: unknown) => {
        this.#logger?.warn({ err: error, peer: formatPeer(peer) }, 'a notification for an unknown observation could not be looked up');
        reject();
      });
  }

  onNotification(observation: ClientObservation, message: CoapMessage, now: number): void {
    this.#stats.notificationsReceived++;
    const seq = observe(message);
    if (!isSuccess(message.code) || seq === undefined) {
      // RFC 7641 3.2: an error response, or one without Observe, ends the observation.
      this.endObservation(observation, `notification ${message.code}${seq === undefined ? ' without Observe' : ''}`);
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
    const ctx = this.#exchanges.callContext({ maxMessageSize: observation.maxMessageSize, maxBodySize: observation.maxBodySize });
    const send = (r: OutgoingRequest) => this.#exchanges.exchange(observation.peer, r, ctx, undefined, undefined);
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
}

function safeBlock(message: CoapMessage): BlockOption | undefined {
  try {
    const value = message.options.find((o) => o.number === OptionNumber.Block2)?.value;
    return value === undefined ? undefined : decodeBlock(value);
  } catch {
    return undefined;
  }
}
