/**
 * What arrives on the transport: decoded, de-duplicated (RFC 7252 4.5) and dispatched. ACK and RST go to the
 * message layer, pings are answered here, requests go to IncomingRequests, and responses (separate ones,
 * notifications) are matched by token to what the client side waits for.
 */
import type { Logger } from 'pino';
import type { ClientObservations } from './client-observations.js';
import { CoapError } from './coap-error.js';
import type { MessageIdCache, SeenMessage } from './dedup.js';
import type { CoapStats } from './endpoint-types.js';
import type { IncomingRequests } from './incoming-requests.js';
import { codeClass, decodeMessage, emptyMessage, EMPTY_CODE, encodeMessage, isResponseCode, type CoapMessage } from './message.js';
import type { MessageLayer } from './message-layer.js';
import { checkOptions, observe } from './options.js';
import type { TokenTable } from './outgoing-exchanges.js';
import type { DerivedTimes } from './parameters.js';
import type { PeerTable } from './peers.js';
import { formatPeer, peerKey, type Peer, type Transport } from './transport.js';

export class DatagramReceiver {
  /** CoapEndpoint.onPing's handler. */
  pingHandler: ((peer: Peer) => void) | undefined;
  /** CoapEndpoint.onStrayNotification's handler. */
  strayNotificationHandler: ((token: string, peer: Peer) => Promise<boolean>) | undefined;

  readonly #layer: MessageLayer;
  readonly #stats: CoapStats;
  readonly #logger: Logger | undefined;
  readonly #transport: Transport;
  readonly #times: DerivedTimes;
  readonly #peers: PeerTable;
  readonly #seen: MessageIdCache;
  readonly #requests: IncomingRequests;
  readonly #observations: ClientObservations;
  readonly #tokens: TokenTable;

  constructor(layer: MessageLayer, requests: IncomingRequests, observations: ClientObservations, tokens: TokenTable) {
    this.#layer = layer;
    this.#stats = layer.stats;
    this.#logger = layer.logger;
    this.#transport = layer.transport;
    this.#times = layer.times;
    this.#peers = layer.peers;
    this.#seen = layer.seen;
    this.#requests = requests;
    this.#observations = observations;
    this.#tokens = tokens;
  }

  readonly onDatagram = (datagram: Buffer, peer: Peer): void => {
    this.#stats.received++;
    if (!this.#layer.running) return;
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
    this.#layer.send(encodeMessage(emptyMessage('RST', messageId)), peer);
  }

  #dispatch(message: CoapMessage, peer: Peer, size: number): void {
    const key = peerKey(peer);
    const type = message.type;
    if (type === 'ACK') {
      this.#layer.onAcknowledgement(message, key);
      return;
    }
    if (type === 'RST') {
      if (message.code === EMPTY_CODE) this.#layer.onReset(message, key);
      return;
    }
    if (message.code === EMPTY_CODE) {
      // RFC 7252 4.3: an empty CON is a ping, answered with RST; an empty NON is ignored.
      if (type === 'CON') {
        this.#stats.pings++;
        this.#layer.send(encodeMessage(emptyMessage('RST', message.messageId)), peer);
        if (this.pingHandler !== undefined) {
          try {
            this.pingHandler(peer);
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
        if (seen.reply !== undefined) this.#layer.send(seen.reply, peer);
        else seen.onDuplicate?.();
      }
      return;
    }
    const entry = this.#seen.add(state.seen, message.messageId, now + (type === 'CON' ? this.#times.exchangeLifetime : this.#times.nonLifetime));
    if (cls === 0) this.#requests.onRequest(message, peer, key, state, size, entry, now);
    else this.#onResponse(message, peer, key, entry, now);
  }

  /** A separate response or a notification (CON or NON carrying a response code). */
  #onResponse(message: CoapMessage, peer: Peer, key: string, seen: SeenMessage, now: number): void {
    const token = message.token.toString('hex');
    const entry = this.#tokens.get(token);
    if (entry === undefined && this.strayNotificationHandler !== undefined && message.token.length > 0 && observe(message) !== undefined && checkOptions(message.options).ok) {
      this.#observations.takeUpNotification(this.strayNotificationHandler, token, message, peer, key, seen);
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
      this.#layer.send(seen.reply, peer);
      if (entry?.kind === 'exchange' && entry.key === key) entry.settle(new CoapError('BAD_RESPONSE', 'response with an unrecognised critical option'));
      return;
    }
    if (message.type === 'CON') {
      seen.reply = encodeMessage(emptyMessage('ACK', message.messageId));
      this.#layer.send(seen.reply, peer);
    }
    this.#layer.markVerified(key);
    if (entry.kind === 'exchange') entry.settle(message);
    else this.#observations.onNotification(entry, message, now);
  }
}
