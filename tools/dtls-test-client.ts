/**
 * A minimal DTLS 1.2 client (RFC 6347) for tests and benchmarks, built on the server's own codecs
 * (src/dtls: records, handshake messages, PRF, record protection) so it can do what node-dtls-client cannot:
 * - PSK (RFC 4279) with TLS_PSK_WITH_AES_128_CCM_8 (0xC0A8, the LwM2M mandatory suite) or another PSK suite
 *   of cipher-suites.ts, the extended master secret (RFC 7627), the HelloVerifyRequest cookie exchange;
 * - abbreviated handshakes (RFC 5246 7.3): resume a session by its id and master secret ({@link session});
 * - the Connection ID extension (RFC 9146, type 54, or draft-ietf-tls-dtls-connection-id-05, type 254): it
 *   offers a CID (empty or not) and puts the server's CID on its epoch-1 records as tls12_cid (25) records,
 *   with the AAD of the negotiated form;
 * - {@link rebind}: the same DTLS connection continues from a new local UDP socket (a NAT rebinding);
 * - raw access for protocol tests: {@link sealApplicationData} and {@link sendRaw} (replays, forgeries), and
 *   a loss simulator (option `drop`).
 * It is a {@link Transport}, so a CoapEndpoint runs over it (start() shakes hands). Flights are sent again
 * on a timer (1 s, doubling, 3 transmissions by default) and every wait is bounded. Loopback tests only:
 * it checks the server's Finished but nothing else a real client would (no certificates, one server).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { BoundAddress, DatagramListener, Peer, Transport } from '../src/coap/transport.js';
import { CIPHER_SUITES, createProtection, keyBlockLength, splitKeyBlock, type CidFormat, type CipherSuite, type ConnectionKeys, type RecordProtection } from '../src/dtls/cipher-suites.js';
import {
  alert,
  AlertDescription,
  AlertLevel,
  clientHello,
  clientKeyExchangePsk,
  connectionIdExtension,
  ExtensionType,
  finished,
  HandshakeReassembler,
  handshakeHashInput,
  HandshakeType,
  parseAlert,
  parseConnectionIdExtension,
  parseFinished,
  parseHandshakeFragments,
  parseHelloVerifyRequest,
  parseServerHello,
  renegotiationInfoExtension,
  serializeHandshake,
  type Extension,
  type HandshakeMessage,
} from '../src/dtls/handshake-messages.js';
import { extendedMasterSecret, keyBlock, masterSecret, pskPreMasterSecret, verifyData } from '../src/dtls/prf.js';
import { ContentType, DTLS_1_2, parseRecords, ReplayWindow, serializeRecord, type DtlsRecord } from '../src/dtls/records.js';

/** TLS_PSK_WITH_AES_128_CCM_8 (RFC 6655 4). */
export const PSK_AES_128_CCM_8 = 0xc0a8;

/** What an abbreviated handshake needs of an earlier connection (RFC 5246 7.4.1.2, 7.3). */
export interface DtlsResumableSession {
  readonly id: Buffer;
  readonly master: Buffer;
  readonly suite: number;
  readonly extendedMasterSecret: boolean;
}

export interface DtlsTestClientOptions {
  readonly server: Peer;
  readonly identity: string | Buffer;
  /** The PSK, raw bytes. */
  readonly key: Buffer;
  /** PSK cipher suites offered, in order. Default [0xC0A8]. */
  readonly cipherSuites?: readonly number[];
  /** Offer the extended master secret (RFC 7627). Default true. */
  readonly extendedMasterSecret?: boolean;
  /**
   * Offer a Connection ID: `extension` 54 (RFC 9146) or 254 (draft-05); `cid` is the CID the server is to put
   * on its records to us (empty, the default: none, we only put the server's CID on ours).
   */
  readonly connectionId?: { readonly extension: 54 | 254; readonly cid?: Buffer };
  /** Try to resume this session (abbreviated handshake); a server that does not know it makes a full one. */
  readonly session?: DtlsResumableSession;
  /** Local bind address; default 127.0.0.1 (::1 for an IPv6 server). */
  readonly host?: string;
  /** Local port of the first socket; default 0 (any). */
  readonly localPort?: number;
  /** First retransmission timeout of a flight in ms, doubled each time. Default 1000. */
  readonly retransmitMs?: number;
  /** Transmissions of a flight before the handshake fails. Default 3: sent, again after 1 s, again after 2 s more, fail 4 s later. */
  readonly maxTransmissions?: number;
  /** The whole handshake fails after this long, whatever the retransmissions. Default 15 000 ms. */
  readonly handshakeTimeoutMs?: number;
  /** Loss simulation: datagrams (counted from 0 in each direction) for which this returns true are dropped. */
  readonly drop?: (direction: 'in' | 'out', index: number, datagram: Buffer) => boolean;
}

export interface DtlsTestClientStats {
  /** Flights of ours that awaited an answer (retransmissions not counted): full handshake 3, resumed 2. */
  handshakeRoundTrips: number;
  /** Whether the handshake was abbreviated (the server resumed the offered session). */
  resumed: boolean;
  /** Whether the server asked for a cookie (HelloVerifyRequest). */
  cookieExchange: boolean;
  /** Handshake messages we sent, by name, in order (first transmissions only). */
  messagesSent: string[];
  handshakeMs: number;
  /** Flights sent again: on our timer, or (our last flight) because the server repeated its own. */
  flightRetransmissions: number;
  recordsSent: number;
  recordsReceived: number;
  /** Epoch-1 records dropped as replays, and those that did not authenticate. */
  replaysDropped: number;
  badRecords: number;
  alertsReceived: { level: number; description: number }[];
  rebinds: number;
}

export class DtlsAlertError extends Error {
  constructor(
    readonly level: number,
    readonly description: number,
  ) {
    super(`DTLS ${level === AlertLevel.fatal ? 'fatal' : 'warning'} alert ${description} (${alertName(description)})`);
  }
}

export class DtlsTimeoutError extends Error {}

type FlightItem = { readonly kind: 'handshake'; readonly msgType: number; readonly messageSeq: number; readonly body: Buffer; readonly epoch: number } | { readonly kind: 'ccs' };
type Phase = 'idle' | 'hello' | 'serverHello' | 'serverFinished' | 'connected' | 'closed';

const MESSAGE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(HandshakeType).map(([name, type]) => [type, name]));
const alertName = (description: number): string => Object.entries(AlertDescription).find(([, value]) => value === description)?.[0] ?? 'unknown';

export class DtlsTestClient implements Transport {
  readonly verifiesPeers = true;
  readonly options: DtlsTestClientOptions;
  readonly stats: DtlsTestClientStats = {
    handshakeRoundTrips: 0,
    resumed: false,
    cookieExchange: false,
    messagesSent: [],
    handshakeMs: 0,
    flightRetransmissions: 0,
    recordsSent: 0,
    recordsReceived: 0,
    replaysDropped: 0,
    badRecords: 0,
    alertsReceived: [],
    rebinds: 0,
  };

  #socket: dgram.Socket | undefined;
  #listener: DatagramListener | undefined;
  #phase: Phase = 'idle';
  readonly #clientRandom = randomBytes(32);
  readonly #offeredSessionId: Buffer;
  readonly #ownCid: Buffer;
  readonly #ems: boolean;
  #cookie = Buffer.alloc(0);
  #serverRandom: Buffer | undefined;
  #sessionId: Buffer | undefined;
  #suite: CipherSuite | undefined;
  #master: Buffer | undefined;
  #keys: { client: ConnectionKeys; server: ConnectionKeys } | undefined;
  /** Negotiated CID: the form, the server's CID (on our records), ours (on its records; empty: none). */
  #cid: { format: CidFormat; theirs: Buffer; ours: Buffer } | undefined;
  #write: RecordProtection | undefined;
  #read: RecordProtection | undefined;
  #serverCcs = false;
  readonly #readReplay = new ReplayWindow();
  readonly #writeSeq = [0n, 0n];
  #messageSeq = 0;
  readonly #transcript: Buffer[] = [];
  /** The ClientHello in the transcript: the one the server answered with its ServerHello (RFC 6347 4.2.1). */
  #lastHello: Buffer | undefined;
  readonly #reassembler = new HandshakeReassembler();
  #flight: FlightItem[] = [];
  #flightTimer: NodeJS.Timeout | undefined;
  #transmissions = 0;
  #lastRepeatAt = 0;
  #deadline: NodeJS.Timeout | undefined;
  #startedAt = 0;
  #handshake: { resolve: () => void; reject: (error: Error) => void } | undefined;
  readonly #datagrams = { in: 0, out: 0 };

  constructor(options: DtlsTestClientOptions) {
    this.options = options;
    this.#ems = options.extendedMasterSecret ?? true;
    this.#offeredSessionId = options.session ? Buffer.from(options.session.id) : Buffer.alloc(0);
    this.#ownCid = options.connectionId?.cid ? Buffer.from(options.connectionId.cid) : Buffer.alloc(0);
  }

  /** Binds a socket, shakes hands, resolves when application data may flow; the client is ready to use. */
  static async connect(options: DtlsTestClientOptions, listener: DatagramListener = () => undefined): Promise<DtlsTestClient> {
    const client = new DtlsTestClient(options);
    await client.start(listener);
    return client;
  }

  /** Transport: binds, shakes hands; rejects with DtlsAlertError on a fatal alert, DtlsTimeoutError when the server stays silent. */
  async start(listener: DatagramListener): Promise<void> {
    if (this.#phase !== 'idle') throw new Error('already started');
    this.#listener = listener;
    this.#socket = await this.#bind(this.options.localPort ?? 0);
    this.#startedAt = performance.now();
    const done = new Promise<void>((resolve, reject) => (this.#handshake = { resolve, reject }));
    this.#deadline = setTimeout(() => this.#fail(new DtlsTimeoutError(`DTLS handshake not finished after ${this.options.handshakeTimeoutMs ?? 15_000} ms`)), this.options.handshakeTimeoutMs ?? 15_000);
    this.#phase = 'hello';
    this.#sendHello();
    try {
      await done;
    } catch (error) {
      await this.#closeSocket();
      throw error;
    }
  }

  /** Application data to the server (the peer argument is ignored: there is one server). Dropped unless connected. */
  send(datagram: Buffer): void {
    if (this.#phase !== 'connected') return;
    this.sendRaw(this.sealApplicationData(datagram));
  }

  /** One protected application-data record (it takes the next sequence number), for sendRaw() now or later. */
  sealApplicationData(content: Buffer): Buffer {
    if (!this.#write) throw new Error('not connected');
    return this.#record(ContentType.applicationData, content, 1);
  }

  /** Sends bytes as they are from the current socket (one datagram). */
  sendRaw(datagram: Buffer): void {
    if (this.options.drop?.('out', this.#datagrams.out++, datagram)) return;
    this.#socket?.send(datagram, this.options.server.port, this.options.server.address);
  }

  /** The local address of the current socket. */
  address(): BoundAddress {
    if (!this.#socket) throw new Error('not started');
    const info = this.#socket.address();
    return { address: info.address, port: info.port, family: info.family === 'IPv6' ? 'IPv6' : 'IPv4' };
  }

  /**
   * Moves to a new local UDP socket (a new port) and closes the old one, keeping the DTLS connection: what a
   * NAT rebinding does to a device. With a Connection ID the server should follow on the next record it can
   * authenticate; without, the records from the new address belong to no connection of the server's.
   */
  async rebind(): Promise<BoundAddress> {
    if (!this.#socket) throw new Error('not started');
    const old = this.#socket;
    this.#socket = await this.#bind(0);
    this.stats.rebinds++;
    await new Promise<void>((resolve) => old.close(() => resolve()));
    return this.address();
  }

  /** After the handshake: what a later client resumes with. */
  get session(): DtlsResumableSession | undefined {
    if (this.#phase !== 'connected' && this.#phase !== 'closed') return undefined;
    if (!this.#sessionId || this.#sessionId.length === 0 || !this.#master || !this.#suite) return undefined;
    return { id: Buffer.from(this.#sessionId), master: Buffer.from(this.#master), suite: this.#suite.id, extendedMasterSecret: this.#ems };
  }

  /** The negotiated Connection ID: its form, the server's CID (on our records), ours (on the server's; may be empty). */
  get connectionId(): { readonly format: CidFormat; readonly extension: 54 | 254; readonly theirs: Buffer; readonly ours: Buffer } | undefined {
    return this.#cid && { format: this.#cid.format, extension: this.#cid.format === 'draft05' ? 254 : 54, theirs: this.#cid.theirs, ours: this.#cid.ours };
  }

  get connected(): boolean {
    return this.#phase === 'connected';
  }

  get cipherSuite(): string | undefined {
    return this.#suite?.name;
  }

  /** Sends close_notify when connected (unless told not to) and closes the socket. */
  async stop(options: { closeNotify?: boolean } = {}): Promise<void> {
    if (this.#phase === 'connected' && (options.closeNotify ?? true)) {
      try {
        this.sendRaw(this.#record(ContentType.alert, alert(AlertLevel.warning, AlertDescription.close_notify), 1));
      } catch {
        // nothing more to say
      }
    }
    if (this.#phase !== 'idle') this.#phase = 'closed';
    this.#fail(new Error('stopped'));
    await this.#closeSocket();
  }

  // ---- sockets

  #bind(port: number): Promise<dgram.Socket> {
    const host = this.options.host ?? (isIPv6(this.options.server.address) ? '::1' : '127.0.0.1');
    const socket = dgram.createSocket(isIPv6(host) ? 'udp6' : 'udp4');
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => {
        socket.off('error', reject);
        socket.on('error', () => undefined); // ICMP errors of sends: UDP gives no promise anyway
        socket.on('message', (datagram, rinfo) => {
          if (this.#socket !== socket) return; // a late datagram to a socket we left
          if (rinfo.port !== this.options.server.port || rinfo.address.replace(/^::ffff:/, '') !== this.options.server.address) return;
          if (this.options.drop?.('in', this.#datagrams.in++, datagram)) return;
          this.#received(datagram);
        });
        resolve(socket);
      });
    });
  }

  async #closeSocket(): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  // ---- records

  #record(contentType: number, content: Buffer, epoch: 0 | 1): Buffer {
    const sequenceNumber = this.#writeSeq[epoch]!++;
    this.stats.recordsSent++;
    if (epoch === 0) return serializeRecord({ contentType, version: DTLS_1_2, epoch, sequenceNumber, fragment: content });
    if (!this.#write) throw new Error('no epoch-1 keys');
    const cid = this.#cid && this.#cid.theirs.length > 0 ? this.#cid.theirs : undefined;
    const header = { contentType, version: DTLS_1_2, epoch, sequenceNumber, ...(cid && { cid }) };
    return serializeRecord({ ...header, ...(cid && { contentType: ContentType.tls12Cid }), fragment: this.#write.encrypt(header, content) });
  }

  #received(datagram: Buffer): void {
    const cidLength = this.#cid?.ours.length ?? this.#ownCid.length;
    const records = parseRecords(datagram, cidLength);
    if (!records) return;
    for (const record of records) {
      this.stats.recordsReceived++;
      try {
        if (record.epoch === 0) this.#plainRecord(record);
        else this.#protectedRecord(record);
      } catch (error) {
        this.#fail(error instanceof Error ? error : new Error(String(error)));
      }
      if (this.#phase === 'closed') return;
    }
  }

  #plainRecord(record: DtlsRecord): void {
    if (record.contentType === ContentType.handshake) return this.#handshakeFragments(record.fragment, 0);
    if (record.contentType === ContentType.alert) return this.#alert(record.fragment);
    if (record.contentType === ContentType.changeCipherSpec && this.#keys && !this.#serverCcs && this.#phase === 'serverFinished') {
      this.#serverCcs = true;
      this.#read = createProtection(this.#suite!, this.#keys.server, { format: this.#cid?.format ?? 'rfc9146' });
    }
  }

  #protectedRecord(record: DtlsRecord): void {
    if (record.epoch !== 1 || !this.#read) return;
    // With our CID negotiated the server must put it on its records (RFC 9146 3), and nothing else.
    const expectsCid = this.#cid !== undefined && this.#cid.ours.length > 0;
    if (expectsCid !== (record.cid !== undefined) || (record.cid && !record.cid.equals(this.#cid!.ours))) {
      this.stats.badRecords++;
      return;
    }
    if (this.#readReplay.isReplay(record.sequenceNumber)) {
      this.stats.replaysDropped++;
      return;
    }
    const header = { contentType: record.contentType, version: record.version, epoch: record.epoch, sequenceNumber: record.sequenceNumber, ...(record.cid && { cid: record.cid }) };
    const opened = this.#read.open(header, record.fragment);
    if (!opened) {
      this.stats.badRecords++;
      return;
    }
    this.#readReplay.accept(record.sequenceNumber);
    if (opened.type === ContentType.applicationData) {
      if (this.#phase === 'connected') this.#listener?.(Buffer.from(opened.content), this.options.server);
    } else if (opened.type === ContentType.handshake) this.#handshakeFragments(opened.content, 1);
    else if (opened.type === ContentType.alert) this.#alert(opened.content);
  }

  #alert(content: Buffer): void {
    const parsed = parseAlert(content);
    if (!parsed) return;
    this.stats.alertsReceived.push(parsed);
    if (parsed.level === AlertLevel.fatal || parsed.description === AlertDescription.close_notify) {
      this.#fail(new DtlsAlertError(parsed.level, parsed.description));
      this.#phase = 'closed';
    }
  }

  // ---- handshake

  #handshakeFragments(content: Buffer, epoch: 0 | 1): void {
    const fragments = parseHandshakeFragments(content);
    if (!fragments) return;
    for (const fragment of fragments) {
      if (fragment.messageSeq < this.#reassembler.nextSeq) {
        this.#serverRepeated();
        continue;
      }
      for (const message of this.#reassembler.add(fragment)) this.#message(message, epoch);
    }
  }

  /** The server sent a flight again: it missed our last one. Our timer covers the handshake; after it, answer once in a while. */
  #serverRepeated(): void {
    if (this.#phase !== 'connected' || this.#flight.length === 0) return;
    const now = performance.now();
    if (now - this.#lastRepeatAt < 250) return;
    this.#lastRepeatAt = now;
    this.stats.flightRetransmissions++;
    this.#transmit(this.#flight);
  }

  #message(message: HandshakeMessage, epoch: 0 | 1): void {
    const { msgType, body } = message;
    if (msgType === HandshakeType.helloVerifyRequest && this.#phase === 'hello' && epoch === 0) {
      const verify = parseHelloVerifyRequest(body);
      if (!verify) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.decode_error);
      this.#cookie = Buffer.from(verify.cookie);
      this.stats.cookieExchange = true;
      this.#sendHello();
      return;
    }
    if (msgType === HandshakeType.serverHello && this.#phase === 'hello' && epoch === 0) return this.#serverHello(message);
    if (this.#phase === 'serverHello' && epoch === 0) {
      this.#transcript.push(handshakeHashInput(msgType, message.messageSeq, body));
      // PSK: an optional ServerKeyExchange with the identity hint (RFC 4279 2), then ServerHelloDone.
      if (msgType === HandshakeType.serverKeyExchange) return;
      if (msgType === HandshakeType.serverHelloDone) return this.#keyExchange();
      throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.unexpected_message);
    }
    if (msgType === HandshakeType.finished && this.#phase === 'serverFinished' && epoch === 1 && this.#serverCcs) return this.#serverFinished(message);
    throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.unexpected_message);
  }

  /** ClientHello, first without a cookie, then with the one the server gave (same random, RFC 6347 4.2.1). */
  #sendHello(): void {
    const extensions: Extension[] = [{ type: ExtensionType.renegotiationInfo, data: renegotiationInfoExtension() }];
    if (this.#ems) extensions.push({ type: ExtensionType.extendedMasterSecret, data: Buffer.alloc(0) });
    if (this.options.connectionId) extensions.push({ type: this.options.connectionId.extension, data: connectionIdExtension(this.#ownCid) });
    const body = clientHello({
      random: this.#clientRandom,
      sessionId: this.#offeredSessionId,
      cookie: this.#cookie,
      cipherSuites: [...(this.options.cipherSuites ?? [PSK_AES_128_CCM_8])],
      extensions,
    });
    const item = this.#handshakeItem(HandshakeType.clientHello, body, 0);
    this.#lastHello = handshakeHashInput(HandshakeType.clientHello, item.messageSeq, body);
    this.#sendFlight([item], true);
  }

  #serverHello(message: HandshakeMessage): void {
    const hello = parseServerHello(message.body);
    if (!hello) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.decode_error);
    const offered = this.options.cipherSuites ?? [PSK_AES_128_CCM_8];
    const suite = CIPHER_SUITES.get(hello.cipherSuite);
    if (hello.version !== DTLS_1_2 || !suite || suite.keyExchange !== 'psk' || !offered.includes(hello.cipherSuite) || hello.compressionMethod !== 0) {
      throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.illegal_parameter);
    }
    const ems = hello.extensions.has(ExtensionType.extendedMasterSecret);
    if (ems !== this.#ems) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.handshake_failure); // RFC 7627 5.2: we insist
    this.#suite = suite;
    this.#serverRandom = Buffer.from(hello.random);
    this.#sessionId = Buffer.from(hello.sessionId);
    const cidType = this.options.connectionId?.extension;
    for (const type of [ExtensionType.connectionId, ExtensionType.connectionIdDraft]) {
      const data = hello.extensions.get(type);
      if (data === undefined) continue;
      const theirs = parseConnectionIdExtension(data);
      if (type !== cidType || !theirs) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.unsupported_extension);
      this.#cid = { format: type === ExtensionType.connectionIdDraft ? 'draft05' : 'rfc9146', theirs: Buffer.from(theirs), ours: this.#ownCid };
    }
    this.#transcript.push(this.#lastHello!, handshakeHashInput(HandshakeType.serverHello, message.messageSeq, message.body));
    // The ClientHello's timer runs on until the server's flight is whole (ServerHelloDone, or its Finished when resuming).
    const session = this.options.session;
    const resumed = session !== undefined && this.#offeredSessionId.length > 0 && this.#sessionId.equals(this.#offeredSessionId);
    if (resumed) {
      if (session.suite !== suite.id) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.illegal_parameter);
      this.stats.resumed = true;
      this.#master = Buffer.from(session.master);
      this.#deriveKeys();
      this.#phase = 'serverFinished'; // the server's CCS and Finished follow its ServerHello
      return;
    }
    this.#phase = 'serverHello';
  }

  /** Full handshake, the client's second flight: ClientKeyExchange, ChangeCipherSpec, Finished. */
  #keyExchange(): void {
    this.#stopFlightTimer();
    const identity = typeof this.options.identity === 'string' ? Buffer.from(this.options.identity, 'utf8') : this.options.identity;
    const exchange = this.#handshakeItem(HandshakeType.clientKeyExchange, clientKeyExchangePsk(identity), 0);
    this.#transcript.push(handshakeHashInput(exchange.msgType, exchange.messageSeq, exchange.body));
    const preMaster = pskPreMasterSecret(this.options.key);
    // RFC 7627 4: the session hash covers the transcript up to and including ClientKeyExchange.
    this.#master = this.#ems ? extendedMasterSecret(preMaster, this.#hash()) : masterSecret(preMaster, this.#clientRandom, this.#serverRandom!);
    this.#deriveKeys();
    const clientFinished = this.#clientFinished();
    this.#phase = 'serverFinished';
    this.#sendFlight([exchange, { kind: 'ccs' }, clientFinished], true);
  }

  #serverFinished(message: HandshakeMessage): void {
    const received = parseFinished(message.body);
    const expected = verifyData(this.#master!, 'server finished', this.#hash());
    if (!received || !timingSafeEqual(received, expected)) throw new DtlsAlertError(AlertLevel.fatal, AlertDescription.decrypt_error);
    this.#transcript.push(handshakeHashInput(HandshakeType.finished, message.messageSeq, message.body));
    this.#stopFlightTimer();
    if (this.stats.resumed) {
      // Abbreviated: our CCS and Finished end it; kept to send again if the server repeats its flight.
      this.#sendFlight([{ kind: 'ccs' }, this.#clientFinished()], false);
    } else {
      this.#flight = []; // the server's Finished ended it: nothing of ours to send again
    }
    this.#phase = 'connected';
    this.stats.handshakeMs = performance.now() - this.#startedAt;
    clearTimeout(this.#deadline);
    this.#handshake?.resolve();
    this.#handshake = undefined;
  }

  #clientFinished(): FlightItem {
    const item = this.#handshakeItem(HandshakeType.finished, finished(verifyData(this.#master!, 'client finished', this.#hash())), 1);
    this.#transcript.push(handshakeHashInput(HandshakeType.finished, item.messageSeq, item.body));
    return item;
  }

  #deriveKeys(): void {
    const suite = this.#suite!;
    this.#keys = splitKeyBlock(suite, keyBlock(this.#master!, this.#serverRandom!, this.#clientRandom, keyBlockLength(suite)));
    this.#write = createProtection(suite, this.#keys.client, { format: this.#cid?.format ?? 'rfc9146' });
  }

  #handshakeItem(msgType: number, body: Buffer, epoch: 0 | 1): FlightItem & { kind: 'handshake' } {
    this.stats.messagesSent.push(MESSAGE_NAMES[msgType] ?? String(msgType));
    return { kind: 'handshake', msgType, messageSeq: this.#messageSeq++, body, epoch };
  }

  #hash(): Buffer {
    const hash = createHash('sha256');
    for (const part of this.#transcript) hash.update(part);
    return hash.digest();
  }

  // ---- flights and their retransmission (RFC 6347 4.2.4)

  #sendFlight(flight: FlightItem[], awaitsAnswer: boolean): void {
    this.#stopFlightTimer();
    this.#flight = flight;
    this.#transmissions = 0;
    if (awaitsAnswer) this.stats.handshakeRoundTrips++;
    this.#transmit(flight);
    if (awaitsAnswer) this.#armFlightTimer();
  }

  /** Every transmission gets new record sequence numbers (RFC 6347 4.2.4: records are never repeated as such). */
  #transmit(flight: readonly FlightItem[]): void {
    const records: Buffer[] = [];
    for (const item of flight) {
      if (item.kind === 'ccs') records.push(this.#record(ContentType.changeCipherSpec, Buffer.from([1]), 0));
      else for (const fragment of serializeHandshake(item.msgType, item.messageSeq, item.body, 1000)) records.push(this.#record(ContentType.handshake, fragment, item.epoch as 0 | 1));
    }
    this.sendRaw(Buffer.concat(records));
  }

  #armFlightTimer(): void {
    this.#transmissions++;
    const delay = (this.options.retransmitMs ?? 1000) * 2 ** (this.#transmissions - 1);
    this.#flightTimer = setTimeout(() => {
      if (this.#transmissions >= (this.options.maxTransmissions ?? 3)) {
        this.#fail(new DtlsTimeoutError(`no answer from the DTLS server after ${this.#transmissions} transmissions of our flight`));
        return;
      }
      this.stats.flightRetransmissions++;
      this.#transmit(this.#flight);
      this.#armFlightTimer();
    }, delay);
  }

  #stopFlightTimer(): void {
    clearTimeout(this.#flightTimer);
    this.#flightTimer = undefined;
  }

  /** Ends a running handshake with `error` (nothing happens once connected, except that timers stop). */
  #fail(error: Error): void {
    this.#stopFlightTimer();
    clearTimeout(this.#deadline);
    const handshake = this.#handshake;
    this.#handshake = undefined;
    if (handshake) {
      this.#phase = 'closed';
      handshake.reject(error);
    }
  }
}
