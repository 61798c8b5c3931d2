/**
 * CoAP over DTLS 1.2 (RFC 7252 9.1, RFC 6347), server side: a {@link Transport} the CoAP message layer uses
 * as it uses plain UDP, handing up decrypted datagrams and protecting what it sends. Handshakes are answered
 * with a stateless cookie first (HelloVerifyRequest), bounded in number per address and in total, and time
 * out; established connections are found by address, or by Connection ID when the client's address changes
 * (NAT rebinding), and are evicted when idle. Nothing a peer sends throws out of here.
 */
import type { Logger } from 'pino';
import { formatPeer, UdpTransport, type BoundAddress, type DatagramListener, type Peer, type Transport, type UdpTransportOptions } from '../coap/transport.js';
import { ConnectionProcessor } from './connection-processor.js';
import { DtlsConnection } from './connection.js';
import { CookieJar } from './cookie.js';
import { AlertDescription, clientHelloCookieInput, HandshakeType, helloVerifyRequest, parseClientHello, parseHandshakeFragments, serializeHandshake } from './handshake-messages.js';
import { ServerHandshake, type ServerCredentials } from './handshake.js';
import { ContentType, DTLS_1_0, DTLS_1_2, parseRecords, serializeRecord, type DtlsRecord } from './records.js';
import { SessionCache } from './sessions.js';

/** Largest record number a ClientHello may carry, and its largest message_seq (real clients use 0 and 1). */
const MAX_HELLO_RECORD_SEQ = 2n ** 32n;
const MAX_HELLO_MESSAGE_SEQ = 255;

export interface DtlsTransportOptions extends UdpTransportOptions {
  readonly credentials: ServerCredentials;
  /** Handshakes in progress at most, in total and per address. */
  readonly maxHandshakes?: number;
  readonly maxHandshakesPerAddress?: number;
  /** A handshake not finished after this long is dropped (ms, default 30 s). */
  readonly handshakeTimeoutMs?: number;
  /** An established connection silent this long is evicted (ms, default 24 h); the client resumes or shakes hands again. */
  readonly idleTimeoutMs?: number;
  /** Established connections at most; the least recently heard is evicted first. */
  readonly maxConnections?: number;
  /** Length of the Connection IDs this server issues (0: none). Default 6. */
  readonly cidLength?: number;
  readonly logger?: Logger;
}

/** What the CoAP side may know of a peer's DTLS association. */
export interface DtlsSession {
  /** The PSK identity it proved (PSK suites), as UTF-8. */
  readonly pskIdentity?: string | undefined;
  /** The certificate chain it proved it holds the key of (certificate suites; DER, leaf first). */
  readonly peerCertificates?: readonly Buffer[] | undefined;
  readonly cipherSuite: string;
  readonly connectionId: boolean;
  readonly resumed: boolean;
}

export class DtlsTransport implements Transport {
  readonly verifiesPeers = true;
  readonly #udp: UdpTransport;
  readonly #options: DtlsTransportOptions;
  readonly #cookies = new CookieJar();
  readonly #sessions = new SessionCache();
  /** Established connections by peer, and by our CID. */
  readonly #byPeer = new Map<string, DtlsConnection>();
  readonly #byCid = new Map<string, DtlsConnection>();
  /** Handshakes in progress by peer (an established peer may be shaking hands anew). */
  readonly #handshakes = new Map<string, DtlsConnection>();
  readonly #handshakesPerAddress = new Map<string, number>();
  /** Each connection's records and handshake, over these tables. */
  readonly #processor: ConnectionProcessor;
  #sweep: NodeJS.Timeout | undefined;

  constructor(options: DtlsTransportOptions) {
    this.#options = options;
    this.#udp = new UdpTransport(options);
    this.#processor = new ConnectionProcessor(this.#udp, options, { byPeer: this.#byPeer, byCid: this.#byCid, handshakes: this.#handshakes, handshakesPerAddress: this.#handshakesPerAddress });
  }

  async start(listener: DatagramListener): Promise<void> {
    this.#processor.deliverTo(listener);
    await this.#udp.start((datagram, peer) => this.#received(datagram, peer));
    this.#sweep = setInterval(() => this.#evict(), Math.min(60_000, this.#options.handshakeTimeoutMs ?? 30_000));
    this.#sweep.unref();
  }

  address(): BoundAddress {
    return this.#udp.address();
  }

  async stop(): Promise<void> {
    clearInterval(this.#sweep);
    for (const connection of [...this.#byPeer.values(), ...this.#handshakes.values()]) connection.stopFlightTimer();
    this.#byPeer.clear();
    this.#byCid.clear();
    this.#handshakes.clear();
    await this.#udp.stop();
  }

  /** Sends application data to an established peer; without a connection the datagram is dropped. */
  send(datagram: Buffer, peer: Peer): void {
    const connection = this.#byPeer.get(formatPeer(peer));
    if (!connection?.established) {
      this.#options.logger?.debug({ peer: formatPeer(peer) }, 'no DTLS connection to send on: dropped');
      return;
    }
    this.#udp.send(connection.record(ContentType.applicationData, datagram, 1), connection.peer);
  }

  /** Whether `to` is where the connection once at `from` is now (it moved with its Connection ID). */
  sameAssociation(from: Peer, to: Peer): boolean {
    return this.#byPeer.get(formatPeer(to))?.formerAddresses.includes(formatPeer(from)) ?? false;
  }

  /** The DTLS association of a peer, if it has one. */
  sessionOf(peer: Peer): DtlsSession | undefined {
    const established = this.#byPeer.get(formatPeer(peer))?.established;
    if (!established) return undefined;
    return { pskIdentity: established.identity?.toString('utf8'), peerCertificates: established.peerCertificates, cipherSuite: established.suite.name, connectionId: established.cidIn !== undefined, resumed: established.resumed };
  }

  /** Counts, for metrics and tests. */
  get stats(): { connections: number; handshakes: number; sessions: number } {
    return { connections: this.#byPeer.size, handshakes: this.#handshakes.size, sessions: this.#sessions.size };
  }

  /** A PSK identity's key changed or went: its sessions are not resumed and its connections end. */
  forgetIdentity(identity: Buffer): void {
    this.#sessions.forgetIdentity(identity);
    for (const connection of [...this.#byPeer.values()]) if (connection.established?.identity?.equals(identity)) this.#processor.drop(connection, AlertDescription.close_notify);
  }

  /** Ends a peer's connection (its key was removed): it must shake hands again. */
  close(peer: Peer): void {
    const connection = this.#byPeer.get(formatPeer(peer));
    if (connection) this.#processor.drop(connection, AlertDescription.close_notify);
  }

  #received(datagram: Buffer, peer: Peer): void {
    const records = parseRecords(datagram, this.#options.cidLength ?? 6);
    if (!records || records.length === 0) return;
    const first = records[0]!;
    if (first.contentType === ContentType.tls12Cid && first.cid) {
      const connection = this.#byCid.get(first.cid.toString('hex'));
      if (connection) this.#processor.queue(connection, records, peer);
      return;
    }
    const key = formatPeer(peer);
    if (first.epoch === 0 && first.contentType === ContentType.handshake) {
      const handshaking = this.#handshakes.get(key);
      if (handshaking && !this.#isNewHello(first, handshaking)) return this.#processor.queue(handshaking, records, peer);
      // Established, and the client repeats its last flight (our Finished was lost): send ours again (RFC 6347 4.2.4).
      const established = this.#byPeer.get(key);
      if (!handshaking && established && parseHandshakeFragments(first.fragment)?.[0]?.msgType !== HandshakeType.clientHello) return this.#processor.queue(established, records, peer);
      return this.#hello(first, peer);
    }
    const connection = this.#handshakes.get(key) ?? this.#byPeer.get(key);
    if (connection) this.#processor.queue(connection, records, peer);
  }

  /** A ClientHello that starts over (the client lost its state) rather than one of the running handshake. */
  #isNewHello(record: DtlsRecord, connection: DtlsConnection): boolean {
    const fragment = parseHandshakeFragments(record.fragment)?.[0];
    if (fragment?.msgType !== HandshakeType.clientHello) return false;
    return fragment.messageSeq < connection.reassembler.nextSeq - 1 || (fragment.messageSeq === 0 && connection.reassembler.nextSeq > 1);
  }

  /** A ClientHello outside a handshake: HelloVerifyRequest, or with a good cookie a new handshake (RFC 6347 4.2.1). */
  #hello(record: DtlsRecord, peer: Peer): void {
    const fragments = parseHandshakeFragments(record.fragment);
    const fragment = fragments?.[0];
    // Stateless: the first ClientHello must come whole in one record.
    if (!fragment || fragment.msgType !== HandshakeType.clientHello || fragment.fragmentOffset !== 0 || fragment.fragmentLength !== fragment.length) return;
    // A client starts near 0: numbers near the top would run out before the handshake ends (RFC 6347 4.1).
    if (record.sequenceNumber > MAX_HELLO_RECORD_SEQ || fragment.messageSeq > MAX_HELLO_MESSAGE_SEQ) return;
    const hello = parseClientHello(fragment.body);
    if (!hello) return;
    const input = clientHelloCookieInput(hello);
    if (hello.cookie.length === 0 || !this.#cookies.check(peer, input, hello.cookie)) {
      const [verify] = serializeHandshake(HandshakeType.helloVerifyRequest, fragment.messageSeq, helloVerifyRequest(this.#cookies.make(peer, input)));
      // The record sequence number of the ClientHello, and version 1.0 for old clients (RFC 6347 4.2.1).
      this.#udp.send(serializeRecord({ contentType: ContentType.handshake, version: DTLS_1_0, epoch: 0, sequenceNumber: record.sequenceNumber, fragment: verify! }), peer);
      return;
    }
    const key = formatPeer(peer);
    // The peer starts over: its handshake in progress goes (timer included) before the counts are read.
    const previous = this.#handshakes.get(key);
    if (previous) this.#processor.unlink(previous);
    const perAddress = this.#handshakesPerAddress.get(peer.address) ?? 0;
    if (this.#handshakes.size >= (this.#options.maxHandshakes ?? 1000) || perAddress >= (this.#options.maxHandshakesPerAddress ?? 16)) {
      this.#options.logger?.debug({ peer: key }, 'too many DTLS handshakes in progress: ClientHello ignored');
      return;
    }
    const connection = new DtlsConnection(peer, record.sequenceNumber);
    connection.handshake = new ServerHandshake(hello, fragment.messageSeq, fragment.body, { credentials: this.#options.credentials, sessions: this.#sessions, cidLength: this.#options.cidLength ?? 6 });
    connection.reassembler.nextSeq = fragment.messageSeq + 1;
    this.#handshakes.set(key, connection);
    this.#handshakesPerAddress.set(peer.address, perAddress + 1);
    this.#processor.startHandshake(connection, connection.handshake);
  }

  #evict(): void {
    const now = Date.now();
    const handshakeTimeout = this.#options.handshakeTimeoutMs ?? 30_000;
    for (const connection of [...this.#handshakes.values()]) if (now - connection.startedAt > handshakeTimeout) this.#processor.unlink(connection);
    const idle = this.#options.idleTimeoutMs ?? 24 * 3_600_000;
    for (const connection of [...this.#byPeer.values()]) if (now - connection.lastHeard > idle) this.#processor.unlink(connection);
  }
}

export { DTLS_1_2 };
