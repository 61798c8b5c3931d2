/**
 * CoAP over DTLS 1.2 (RFC 7252 9.1, RFC 6347), server side: a {@link Transport} the CoAP message layer uses
 * as it uses plain UDP, handing up decrypted datagrams and protecting what it sends. Handshakes are answered
 * with a stateless cookie first (HelloVerifyRequest), bounded in number per address and in total, and time
 * out; established connections are found by address, or by Connection ID when the client's address changes
 * (NAT rebinding), and are evicted when idle. Nothing a peer sends throws out of here.
 */
import type { Logger } from 'pino';
import { formatPeer, UdpTransport, type BoundAddress, type DatagramListener, type Peer, type Transport, type UdpTransportOptions } from '../coap/transport.js';
import { DtlsConnection } from './connection.js';
import { CookieJar } from './cookie.js';
import { alert, AlertDescription, clientHelloCookieInput, HandshakeType, helloVerifyRequest, parseAlert, parseClientHello, parseHandshakeFragments, serializeHandshake } from './handshake-messages.js';
import { HandshakeFailure, ServerHandshake, type Outgoing, type ServerCredentials } from './handshake.js';
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
  #listener: DatagramListener | undefined;
  #sweep: NodeJS.Timeout | undefined;

  constructor(options: DtlsTransportOptions) {
    this.#options = options;
    this.#udp = new UdpTransport(options);
  }

  async start(listener: DatagramListener): Promise<void> {
    this.#listener = listener;
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
    for (const connection of [...this.#byPeer.values()]) if (connection.established?.identity?.equals(identity)) this.#drop(connection, AlertDescription.close_notify);
  }

  /** Ends a peer's connection (its key was removed): it must shake hands again. */
  close(peer: Peer): void {
    const connection = this.#byPeer.get(formatPeer(peer));
    if (connection) this.#drop(connection, AlertDescription.close_notify);
  }

  #received(datagram: Buffer, peer: Peer): void {
    const records = parseRecords(datagram, this.#options.cidLength ?? 6);
    if (!records || records.length === 0) return;
    const first = records[0]!;
    if (first.contentType === ContentType.tls12Cid && first.cid) {
      const connection = this.#byCid.get(first.cid.toString('hex'));
      if (connection) this.#queue(connection, records, peer);
      return;
    }
    const key = formatPeer(peer);
    if (first.epoch === 0 && first.contentType === ContentType.handshake) {
      const handshaking = this.#handshakes.get(key);
      if (handshaking && !this.#isNewHello(first, handshaking)) return this.#queue(handshaking, records, peer);
      // Established, and the client repeats its last flight (our Finished was lost): send ours again (RFC 6347 4.2.4).
      const established = this.#byPeer.get(key);
      if (!handshaking && established && parseHandshakeFragments(first.fragment)?.[0]?.msgType !== HandshakeType.clientHello) return this.#queue(established, records, peer);
      return this.#hello(first, peer);
    }
    const connection = this.#handshakes.get(key) ?? this.#byPeer.get(key);
    if (connection) this.#queue(connection, records, peer);
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
    if (previous) this.#unlink(previous);
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
    try {
      const flight = connection.handshake.start();
      if (connection.handshake.resumed) this.#startWriting(connection);
      this.#sendFlight(connection, flight, true);
    } catch (error) {
      this.#fail(connection, error);
    }
  }

  #queue(connection: DtlsConnection, records: DtlsRecord[], peer: Peer): void {
    connection.chain = connection.chain
      .then(() => this.#records(connection, records, peer))
      .catch((error: unknown) => this.#fail(connection, error));
  }

  async #records(connection: DtlsConnection, records: DtlsRecord[], peer: Peer): Promise<void> {
    for (const record of records) {
      if (record.epoch === 0) {
        await this.#plainRecord(connection, record);
        continue;
      }
      if (record.epoch !== 1 || !connection.readProtection) continue;
      const header = { contentType: record.contentType, version: record.version, epoch: record.epoch, sequenceNumber: record.sequenceNumber, ...(record.cid && { cid: record.cid }) };
      if (connection.replay.isReplay(record.sequenceNumber)) continue;
      const opened = connection.readProtection.open(header, record.fragment);
      if (!opened) continue; // bad MAC: dropped silently (RFC 6347 4.1.2.7)
      const newest = connection.replay.latest;
      connection.replay.accept(record.sequenceNumber);
      connection.lastHeard = Date.now();
      const { content, type } = opened;
      // RFC 9146 6: only an authenticated record newer than any before moves the connection to its address.
      if (record.cid && record.sequenceNumber > newest && formatPeer(peer) !== formatPeer(connection.peer) && connection.established) this.#moved(connection, peer);
      await this.#content(connection, type, content);
    }
  }

  /** Epoch 0 after the hello: the client's second flight up to its ChangeCipherSpec. */
  async #plainRecord(connection: DtlsConnection, record: DtlsRecord): Promise<void> {
    const handshake = connection.handshake;
    if (!handshake) return;
    if (connection.established) {
      // Unauthenticated: an alert or handshake record at epoch 0 cannot end or steer an established connection.
      // The one thing it may mean is that our last flight was lost: that is sent again, at most once a second.
      if (record.contentType === ContentType.handshake && Date.now() - connection.lastResend > 1000 && connection.lastFlight.length > 0) {
        connection.lastResend = Date.now();
        this.#sendFlight(connection, connection.lastFlight, false);
      }
      return;
    }
    if (record.contentType === ContentType.changeCipherSpec) {
      if (!connection.readProtection) connection.readProtection = handshake.clientProtection();
      connection.cidIn = handshake.cidIn;
      if (connection.cidIn) this.#byCid.set(connection.cidIn.toString('hex'), connection);
      return;
    }
    if (record.contentType === ContentType.alert) return this.#alert(connection, record.fragment);
    if (record.contentType !== ContentType.handshake) return;
    await this.#handshakeFragments(connection, record.fragment, 0);
  }

  async #content(connection: DtlsConnection, type: number, content: Buffer): Promise<void> {
    if (type === ContentType.applicationData) {
      if (connection.established) this.#listener?.(content, connection.peer);
      return;
    }
    if (type === ContentType.alert) return this.#alert(connection, content);
    if (type === ContentType.handshake) await this.#handshakeFragments(connection, content, 1);
  }

  async #handshakeFragments(connection: DtlsConnection, content: Buffer, epoch: number): Promise<void> {
    const fragments = parseHandshakeFragments(content);
    if (!fragments) return;
    const handshake = connection.handshake;
    let resent = false;
    for (const fragment of fragments) {
      // The client repeats a flight: ours was lost; send it again (RFC 6347 4.2.4), once per datagram.
      if (fragment.messageSeq < connection.reassembler.nextSeq) {
        if (!resent && connection.lastFlight.length > 0) this.#sendFlight(connection, connection.lastFlight, false);
        resent = true;
        continue;
      }
      // The Finished is the first message under the new keys: a plaintext one is a protocol error.
      if (fragment.msgType === HandshakeType.finished && epoch === 0) throw new HandshakeFailure(AlertDescription.unexpected_message, 'a Finished before ChangeCipherSpec');
      if (!handshake) continue;
      for (const message of connection.reassembler.add(fragment)) {
        connection.stopFlightTimer();
        if (message.msgType === HandshakeType.finished) {
          const flight = handshake.clientFinished(message.messageSeq, message.body);
          if (!handshake.resumed) this.#startWriting(connection);
          this.#sendFlight(connection, flight, false);
          this.#establish(connection);
        } else {
          await handshake.receive(message.msgType, message.messageSeq, message.body);
        }
      }
    }
  }

  /** The server's ChangeCipherSpec: its epoch-1 keys (and the client's CID on its records). */
  #startWriting(connection: DtlsConnection): void {
    connection.writeProtection = connection.handshake!.serverProtection();
    connection.cidOut = connection.handshake!.cidOut;
    if (connection.handshake!.resumed) connection.readProtection = connection.handshake!.clientProtection();
  }

  #establish(connection: DtlsConnection): void {
    const key = formatPeer(connection.peer);
    connection.established = connection.handshake!.established;
    this.#forgetHandshake(connection);
    const previous = this.#byPeer.get(key);
    if (previous && previous !== connection) this.#unlink(previous);
    this.#byPeer.set(key, connection);
    if (connection.cidIn) this.#byCid.set(connection.cidIn.toString('hex'), connection);
    const maxConnections = this.#options.maxConnections ?? 100_000;
    if (this.#byPeer.size > maxConnections) {
      const oldest = [...this.#byPeer.values()].reduce((a, b) => (a.lastHeard <= b.lastHeard ? a : b));
      this.#unlink(oldest);
    }
    this.#options.logger?.debug({ peer: key, suite: connection.established?.suite.name, resumed: connection.established?.resumed }, 'DTLS connection established');
  }

  /** A CID record authenticated from a new address: the connection follows the client (RFC 9146 6). */
  #moved(connection: DtlsConnection, peer: Peer): void {
    const oldKey = formatPeer(connection.peer);
    if (this.#byPeer.get(oldKey) === connection) this.#byPeer.delete(oldKey);
    connection.formerAddresses.push(oldKey);
    if (connection.formerAddresses.length > 4) connection.formerAddresses.shift();
    connection.peer = peer;
    const displaced = this.#byPeer.get(formatPeer(peer));
    if (displaced && displaced !== connection) this.#unlink(displaced);
    this.#byPeer.set(formatPeer(peer), connection);
  }

  #sendFlight(connection: DtlsConnection, flight: readonly Outgoing[], awaitsAnswer: boolean): void {
    if (flight.length === 0) return;
    connection.lastFlight = [...flight];
    for (const datagram of connection.flightDatagrams(flight)) this.#udp.send(datagram, connection.peer);
    if (!awaitsAnswer) return;
    connection.stopFlightTimer();
    connection.flightTimer = setTimeout(() => {
      if (connection.established || this.#handshakes.get(formatPeer(connection.peer)) !== connection) return;
      connection.flightTimeoutMs = Math.min(connection.flightTimeoutMs * 2, 60_000);
      try {
        this.#sendFlight(connection, connection.lastFlight, true);
      } catch (error) {
        this.#fail(connection, error);
      }
    }, connection.flightTimeoutMs);
    connection.flightTimer.unref();
  }

  #alert(connection: DtlsConnection, content: Buffer): void {
    const parsed = parseAlert(content);
    if (!parsed) return;
    // RFC 5246 7.2.1: a close_notify is answered with one; a fatal alert just ends the connection.
    if (parsed.description === AlertDescription.close_notify) this.#drop(connection, AlertDescription.close_notify);
    else if (parsed.level === 2) this.#drop(connection);
  }

  #fail(connection: DtlsConnection, error: unknown): void {
    const description = error instanceof HandshakeFailure ? error.alert : AlertDescription.internal_error;
    if (!(error instanceof HandshakeFailure)) this.#options.logger?.warn({ err: error, peer: formatPeer(connection.peer) }, 'DTLS handshake failed');
    else this.#options.logger?.debug({ peer: formatPeer(connection.peer), reason: error.message }, 'DTLS handshake refused');
    this.#drop(connection, description);
  }

  /** Sends a fatal alert (or close_notify) in the connection's current epoch and forgets it. */
  #drop(connection: DtlsConnection, description?: number): void {
    if (description !== undefined) {
      try {
        const epoch = connection.writeProtection ? 1 : 0;
        this.#udp.send(connection.record(ContentType.alert, alert(description === AlertDescription.close_notify ? 1 : 2, description), epoch), connection.peer);
      } catch {
        // nothing more to say to it
      }
    }
    this.#unlink(connection);
  }

  #unlink(connection: DtlsConnection): void {
    connection.stopFlightTimer();
    this.#forgetHandshake(connection);
    const key = formatPeer(connection.peer);
    if (this.#byPeer.get(key) === connection) this.#byPeer.delete(key);
    if (connection.cidIn && this.#byCid.get(connection.cidIn.toString('hex')) === connection) this.#byCid.delete(connection.cidIn.toString('hex'));
  }

  #forgetHandshake(connection: DtlsConnection): void {
    const key = formatPeer(connection.peer);
    if (this.#handshakes.get(key) !== connection) return;
    this.#handshakes.delete(key);
    const left = (this.#handshakesPerAddress.get(connection.peer.address) ?? 1) - 1;
    if (left > 0) this.#handshakesPerAddress.set(connection.peer.address, left);
    else this.#handshakesPerAddress.delete(connection.peer.address);
  }

  #evict(): void {
    const now = Date.now();
    const handshakeTimeout = this.#options.handshakeTimeoutMs ?? 30_000;
    for (const connection of [...this.#handshakes.values()]) if (now - connection.startedAt > handshakeTimeout) this.#unlink(connection);
    const idle = this.#options.idleTimeoutMs ?? 24 * 3_600_000;
    for (const connection of [...this.#byPeer.values()]) if (now - connection.lastHeard > idle) this.#unlink(connection);
  }
}

export { DTLS_1_2 };
