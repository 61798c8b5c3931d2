import { formatPeer, type DatagramListener, type Peer, type UdpTransport } from '../coap/transport.js';
import type { DtlsConnection } from './connection.js';
import type { DtlsTransportOptions } from './dtls-transport.js';
import { alert, AlertDescription, HandshakeType, parseAlert, parseHandshakeFragments } from './handshake-messages.js';
import { HandshakeFailure, type Outgoing, type ServerHandshake } from './handshake.js';
import { ContentType, type DtlsRecord } from './records.js';

/** The DtlsTransport's tables of connections, which it reads to route datagrams and this keeps up to date. */
export interface ConnectionTables {
  /** Established connections by peer, and by our CID. */
  readonly byPeer: Map<string, DtlsConnection>;
  readonly byCid: Map<string, DtlsConnection>;
  /** Handshakes in progress by peer (an established peer may be shaking hands anew). */
  readonly handshakes: Map<string, DtlsConnection>;
  readonly handshakesPerAddress: Map<string, number>;
}

/**
 * What happens on one DTLS connection once the transport has found it: its records opened in order, the
 * handshake driven to its end and its flights sent (and sent again), application data handed up, alerts
 * answered; and the connection's entry in the transport's tables as it is established, moves or ends.
 * The transport keeps the face (sockets, routing, hellos and cookies, eviction); one of these serves it.
 */
export class ConnectionProcessor {
  readonly #udp: UdpTransport;
  readonly #options: Pick<DtlsTransportOptions, 'logger' | 'maxConnections'>;
  readonly #byPeer: Map<string, DtlsConnection>;
  readonly #byCid: Map<string, DtlsConnection>;
  readonly #handshakes: Map<string, DtlsConnection>;
  readonly #handshakesPerAddress: Map<string, number>;
  #listener: DatagramListener | undefined;

  constructor(udp: UdpTransport, options: Pick<DtlsTransportOptions, 'logger' | 'maxConnections'>, tables: ConnectionTables) {
    this.#udp = udp;
    this.#options = options;
    this.#byPeer = tables.byPeer;
    this.#byCid = tables.byCid;
    this.#handshakes = tables.handshakes;
    this.#handshakesPerAddress = tables.handshakesPerAddress;
  }

  /** Where decrypted application data goes (the transport's listener, from its start). */
  deliverTo(listener: DatagramListener): void {
    this.#listener = listener;
  }

  /** The server's first flight of a handshake just registered; a resumed one writes under the new keys at once. */
  startHandshake(connection: DtlsConnection, handshake: ServerHandshake): void {
    try {
      const flight = handshake.start();
      if (handshake.resumed) this.#startWriting(connection);
      this.#sendFlight(connection, flight, true);
    } catch (error) {
      this.#fail(connection, error);
    }
  }

  /** Handles a datagram's records of the connection once those before them are done (see DtlsConnection.chain). */
  queue(connection: DtlsConnection, records: DtlsRecord[], peer: Peer): void {
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
    if (previous && previous !== connection) this.unlink(previous);
    this.#byPeer.set(key, connection);
    if (connection.cidIn) this.#byCid.set(connection.cidIn.toString('hex'), connection);
    const maxConnections = this.#options.maxConnections ?? 100_000;
    if (this.#byPeer.size > maxConnections) {
      const oldest = [...this.#byPeer.values()].reduce((a, b) => (a.lastHeard <= b.lastHeard ? a : b));
      this.unlink(oldest);
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
    if (displaced && displaced !== connection) this.unlink(displaced);
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
    if (parsed.description === AlertDescription.close_notify) this.drop(connection, AlertDescription.close_notify);
    else if (parsed.level === 2) this.drop(connection);
  }

  #fail(connection: DtlsConnection, error: unknown): void {
    const description = error instanceof HandshakeFailure ? error.alert : AlertDescription.internal_error;
    if (!(error instanceof HandshakeFailure)) this.#options.logger?.warn({ err: error, peer: formatPeer(connection.peer) }, 'DTLS handshake failed');
    else this.#options.logger?.debug({ peer: formatPeer(connection.peer), reason: error.message }, 'DTLS handshake refused');
    this.drop(connection, description);
  }

  /** Sends a fatal alert (or close_notify) in the connection's current epoch and forgets it. */
  drop(connection: DtlsConnection, description?: number): void {
    if (description !== undefined) {
      try {
        const epoch = connection.writeProtection ? 1 : 0;
        this.#udp.send(connection.record(ContentType.alert, alert(description === AlertDescription.close_notify ? 1 : 2, description), epoch), connection.peer);
      } catch {
        // nothing more to say to it
      }
    }
    this.unlink(connection);
  }

  /** Forgets the connection: its flight timer, and its place in the tables. */
  unlink(connection: DtlsConnection): void {
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
}
