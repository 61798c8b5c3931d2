/**
 * The server side of one DTLS 1.2 handshake (RFC 6347 4.2, RFC 5246 7.3) after the cookie exchange: picks the
 * cipher suite, makes the server's flights, checks the client's, and derives the keys. PSK (RFC 4279) and
 * ECDHE_ECDSA (RFC 8422) key exchanges, extended master secret (RFC 7627), Connection ID (RFC 9146 and
 * draft-ietf-tls-dtls-connection-id-05), abbreviated handshakes for resumed sessions (RFC 5246 7.3).
 * Records, retransmission and addresses are the server's (server.ts); this knows only messages.
 */
import { createECDH, createHash, randomBytes, sign, timingSafeEqual, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { CIPHER_SUITES, SERVER_PREFERENCE, createProtection, keyBlockLength, splitKeyBlock, type CipherSuite, type ConnectionKeys } from './cipher-suites.js';
import {
  AlertDescription,
  certificate,
  certificateRequest,
  connectionIdExtension,
  ecdheParams,
  ExtensionType,
  finished,
  handshakeHashInput,
  HandshakeType,
  parseClientKeyExchangeEcdhe,
  parseCertificate,
  parseCertificateVerify,
  parseClientKeyExchangePsk,
  parseFinished,
  serverHello,
  serverHelloDone,
  serverKeyExchangeEcdhe,
  type ClientHello,
} from './handshake-messages.js';
import { extendedMasterSecret, keyBlock, masterSecret, pskPreMasterSecret, verifyData } from './prf.js';
import type { SessionCache, SessionTicket } from './sessions.js';

/** secp256r1 (RFC 8422 5.1.1) and ecdsa_secp256r1_sha256 (RFC 5246 7.4.1.4.1 / RFC 8446 4.2.3). */
const SECP256R1 = 23;
const ECDSA_SHA256 = 0x0403;
/** ClientCertificateType ecdsa_sign (RFC 8422 5.5). */
const ECDSA_SIGN = 64;

export interface ServerCredentials {
  /** The PSK of an identity (RFC 4279); undefined: unknown identity. Absent: no PSK suites. */
  readonly pskKey?: ((identity: Buffer) => Promise<Buffer | undefined>) | undefined;
  /** Certificate chain (DER, leaf first) and its P-256 private key. Absent: no ECDHE_ECDSA suites. */
  readonly certificate?: { readonly chain: readonly Buffer[]; readonly privateKey: KeyObject } | undefined;
}

/** What the handshake asks the server to send, in order. */
export type Outgoing = { readonly kind: 'handshake'; readonly msgType: number; readonly messageSeq: number; readonly body: Buffer; readonly epoch: number } | { readonly kind: 'ccs' };

/** What a finished handshake leaves for the connection. */
export interface Established {
  readonly suite: CipherSuite;
  readonly client: ConnectionKeys;
  readonly server: ConnectionKeys;
  /** The PSK identity the client proved (PSK suites). */
  readonly identity?: Buffer | undefined;
  /** The certificate chain the client proved it holds the key of (DER, leaf first; certificate suites). */
  readonly peerCertificates?: readonly Buffer[] | undefined;
  /** CID the client puts on records to us (ours), and the one we put on records to it (its). */
  readonly cidIn?: Buffer | undefined;
  readonly cidOut?: Buffer | undefined;
  readonly cidFormat: 'rfc9146' | 'draft05';
  readonly sessionId: Buffer;
  readonly resumed: boolean;
}

export class HandshakeFailure extends Error {
  constructor(
    readonly alert: number,
    message: string,
  ) {
    super(message);
  }
}

export class ServerHandshake {
  readonly #hello: ClientHello;
  readonly #credentials: ServerCredentials;
  readonly #sessions: SessionCache;
  readonly #transcript: Buffer[] = [];
  readonly #serverRandom = randomBytes(32);
  #sendSeq: number;
  #suite: CipherSuite | undefined;
  #master: Buffer | undefined;
  #keys: { client: ConnectionKeys; server: ConnectionKeys } | undefined;
  #ecdh: ReturnType<typeof createECDH> | undefined;
  #identity: Buffer | undefined;
  /** The client's certificate chain (certificate suites; empty when it sent none). */
  #peerCertificates: Buffer[] | undefined;
  /** Its leaf, once a CertificateVerify is awaited. */
  #peerLeaf: X509Certificate | undefined;
  #sessionId = randomBytes(32);
  #resumed = false;
  #ems: boolean;
  #cidIn: Buffer | undefined;
  #verifiedCertificate = false;
  #established: Established | undefined;

  /** `helloSeq`/`helloBody`: the ClientHello that carried a good cookie; it starts the transcript (RFC 6347 4.2.6). */
  constructor(hello: ClientHello, helloSeq: number, helloBody: Buffer, options: { credentials: ServerCredentials; sessions: SessionCache; cidLength: number }) {
    this.#hello = hello;
    this.#credentials = options.credentials;
    this.#sessions = options.sessions;
    this.#sendSeq = helloSeq;
    this.#ems = hello.extendedMasterSecret;
    this.#transcript.push(handshakeHashInput(HandshakeType.clientHello, helloSeq, helloBody));
    if (hello.connectionId && options.cidLength > 0) this.#cidIn = randomBytes(options.cidLength);
  }

  get established(): Established | undefined {
    return this.#established;
  }

  get suite(): CipherSuite | undefined {
    return this.#suite;
  }

  /** Our CID, on the client's records from epoch 1 on; undefined when none was negotiated. */
  get cidIn(): Buffer | undefined {
    return this.#cidIn;
  }

  /** The client's CID, on our records from epoch 1 on. */
  get cidOut(): Buffer | undefined {
    return this.#cidOut();
  }

  /** Whether this is an abbreviated handshake (the server's Finished went first). */
  get resumed(): boolean {
    return this.#resumed;
  }

  /** The server's first flight: a full handshake, or ServerHello + CCS + Finished for a resumed session. */
  start(): Outgoing[] {
    const resumed = this.#resumable();
    if (resumed) return this.#resume(resumed);
    this.#suite = this.#chooseSuite();
    const flight: Outgoing[] = [this.#message(HandshakeType.serverHello, this.#serverHelloBody(this.#sessionId))];
    if (this.#suite.keyExchange === 'ecdhe_ecdsa') {
      const credential = this.#credentials.certificate!;
      flight.push(this.#message(HandshakeType.certificate, certificate([...credential.chain])));
      this.#ecdh = createECDH('prime256v1');
      const params = ecdheParams(SECP256R1, this.#ecdh.generateKeys());
      const signature = sign('sha256', Buffer.concat([this.#hello.random, this.#serverRandom, params]), credential.privateKey);
      flight.push(this.#message(HandshakeType.serverKeyExchange, serverKeyExchangeEcdhe(params, ECDSA_SHA256, signature)));
      // A device may prove a certificate of its own (X.509 mode); one without sends an empty Certificate.
      flight.push(this.#message(HandshakeType.certificateRequest, certificateRequest({ certificateTypes: [ECDSA_SIGN], signatureAlgorithms: [ECDSA_SHA256], authorities: [] })));
    }
    flight.push(this.#message(HandshakeType.serverHelloDone, serverHelloDone()));
    return flight;
  }

  /** A handshake message of the client's second flight (before its ChangeCipherSpec). */
  async receive(msgType: number, messageSeq: number, body: Buffer): Promise<void> {
    const suite = this.#suite!;
    if (msgType === HandshakeType.certificate && suite.keyExchange === 'ecdhe_ecdsa' && !this.#master && this.#peerCertificates === undefined) {
      this.#peerCertificates = this.#clientCertificates(body);
      this.#transcript.push(handshakeHashInput(msgType, messageSeq, body));
      return;
    }
    if (msgType === HandshakeType.certificateVerify && this.#peerLeaf && this.#master) {
      this.#verifyClientCertificate(body);
      this.#transcript.push(handshakeHashInput(msgType, messageSeq, body));
      return;
    }
    if (msgType !== HandshakeType.clientKeyExchange || this.#master) throw new HandshakeFailure(AlertDescription.unexpected_message, `unexpected handshake message ${msgType}`);
    if (suite.keyExchange === 'ecdhe_ecdsa' && this.#peerCertificates === undefined) throw new HandshakeFailure(AlertDescription.unexpected_message, 'ClientKeyExchange before the client Certificate');
    let preMaster: Buffer;
    if (suite.keyExchange === 'psk') {
      const exchange = parseClientKeyExchangePsk(body);
      if (!exchange) throw new HandshakeFailure(AlertDescription.decode_error, 'bad PSK ClientKeyExchange');
      const key = await this.#credentials.pskKey!(exchange.identity);
      if (!key) throw new HandshakeFailure(AlertDescription.unknown_psk_identity, 'unknown PSK identity');
      this.#identity = exchange.identity;
      preMaster = pskPreMasterSecret(key);
    } else {
      const exchange = parseClientKeyExchangeEcdhe(body);
      if (!exchange) throw new HandshakeFailure(AlertDescription.decode_error, 'bad ECDHE ClientKeyExchange');
      try {
        preMaster = this.#ecdh!.computeSecret(exchange.publicPoint);
      } catch {
        throw new HandshakeFailure(AlertDescription.illegal_parameter, 'bad ECDHE public point');
      }
    }
    this.#transcript.push(handshakeHashInput(msgType, messageSeq, body));
    // RFC 7627 4: the session hash covers the transcript up to and including ClientKeyExchange.
    this.#master = this.#ems ? extendedMasterSecret(preMaster, this.#hash()) : masterSecret(preMaster, this.#hello.random, this.#serverRandom);
    this.#keys = this.#deriveKeys();
  }

  /** Whether a client certificate still waits for its CertificateVerify (the Finished must not come first). */
  get awaitsCertificateVerify(): boolean {
    return this.#peerLeaf !== undefined;
  }

  /** The client's Certificate (RFC 5246 7.4.6): an empty one is fine; a chain's leaf must be a P-256 key. */
  #clientCertificates(body: Buffer): Buffer[] {
    const chain = parseCertificate(body);
    if (!chain) throw new HandshakeFailure(AlertDescription.decode_error, 'bad client Certificate');
    if (chain.length === 0) return chain;
    try {
      this.#peerLeaf = new X509Certificate(chain[0]!);
    } catch {
      throw new HandshakeFailure(AlertDescription.bad_certificate, 'the client certificate does not parse');
    }
    const key = this.#peerLeaf.publicKey;
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new HandshakeFailure(AlertDescription.bad_certificate, 'the client certificate is not an ECDSA P-256 key');
    return chain;
  }

  /** CertificateVerify (RFC 5246 7.4.8): the client signed the transcript so far with its certificate's key. */
  #verifyClientCertificate(body: Buffer): void {
    const parsed = parseCertificateVerify(body);
    if (!parsed || parsed.signatureAlgorithm !== ECDSA_SHA256) throw new HandshakeFailure(AlertDescription.decode_error, 'bad CertificateVerify');
    const signed = Buffer.concat(this.#transcript);
    if (!verify('sha256', signed, this.#peerLeaf!.publicKey, parsed.signature)) throw new HandshakeFailure(AlertDescription.decrypt_error, 'the CertificateVerify signature does not verify');
    this.#peerLeaf = undefined;
    this.#verifiedCertificate = true;
  }

  /** The client's ChangeCipherSpec: the keys its epoch-1 records are protected with. */
  clientProtection(): ReturnType<typeof createProtection> {
    if (!this.#keys) throw new HandshakeFailure(AlertDescription.unexpected_message, 'ChangeCipherSpec before the key exchange');
    return createProtection(this.#suite!, this.#keys.client, this.#cidIn ? { format: this.#cidFormat() } : undefined);
  }

  /** The server's write keys (its ChangeCipherSpec). */
  serverProtection(): ReturnType<typeof createProtection> {
    return createProtection(this.#suite!, this.#keys!.server, this.#cidOut() ? { format: this.#cidFormat() } : undefined);
  }

  /**
   * The client's Finished (epoch 1). Full handshake: checked, and the server's CCS + Finished follow.
   * Resumed: checked, and the handshake is done (the server spoke first).
   */
  clientFinished(messageSeq: number, body: Buffer): Outgoing[] {
    if (this.#peerLeaf) throw new HandshakeFailure(AlertDescription.unexpected_message, 'a client certificate without CertificateVerify');
    if (!this.#master || !this.#keys) throw new HandshakeFailure(AlertDescription.unexpected_message, 'a Finished before the key exchange');
    const received = parseFinished(body);
    const expected = verifyData(this.#master, 'client finished', this.#hash());
    if (!received || received.length !== expected.length || !timingSafeEqual(received, expected)) throw new HandshakeFailure(AlertDescription.decrypt_error, 'the client Finished does not verify');
    this.#transcript.push(handshakeHashInput(HandshakeType.finished, messageSeq, body));
    if (this.#resumed) {
      this.#done();
      return [];
    }
    const flight: Outgoing[] = [{ kind: 'ccs' }, this.#message(HandshakeType.finished, finished(verifyData(this.#master, 'server finished', this.#hash())), 1)];
    this.#done();
    return flight;
  }

  #done(): void {
    const suite = this.#suite!;
    this.#established = {
      suite,
      client: this.#keys!.client,
      server: this.#keys!.server,
      identity: this.#identity,
      ...(this.#verifiedCertificate && { peerCertificates: this.#peerCertificates }),
      cidIn: this.#cidIn,
      cidOut: this.#cidOut(),
      cidFormat: this.#cidFormat(),
      sessionId: this.#sessionId,
      resumed: this.#resumed,
    };
    if (!this.#resumed) this.#sessions.put({ id: this.#sessionId, master: this.#master!, suite: suite.id, identity: this.#identity, extendedMasterSecret: this.#ems });
  }

  #resumable(): SessionTicket | undefined {
    if (this.#hello.sessionId.length === 0) return undefined;
    const session = this.#sessions.get(this.#hello.sessionId);
    // RFC 7627 5.3: a session made without the extended master secret is not resumed with it, nor the other way.
    if (!session || !this.#hello.cipherSuites.includes(session.suite) || session.extendedMasterSecret !== this.#hello.extendedMasterSecret) return undefined;
    if (!CIPHER_SUITES.has(session.suite)) return undefined;
    return session;
  }

  #resume(session: SessionTicket): Outgoing[] {
    this.#resumed = true;
    this.#suite = CIPHER_SUITES.get(session.suite)!;
    this.#sessionId = Buffer.from(session.id);
    this.#master = session.master;
    this.#identity = session.identity;
    this.#keys = this.#deriveKeys();
    const hello = this.#message(HandshakeType.serverHello, this.#serverHelloBody(this.#sessionId));
    const serverFinished = this.#message(HandshakeType.finished, finished(verifyData(this.#master, 'server finished', this.#hash())), 1);
    return [hello, { kind: 'ccs' }, serverFinished];
  }

  #chooseSuite(): CipherSuite {
    // RFC 5746 3.6: an initial handshake with a non-empty renegotiated_connection is aborted.
    if (this.#hello.renegotiationInfo !== undefined && this.#hello.renegotiationInfo.length > 0) throw new HandshakeFailure(AlertDescription.handshake_failure, 'renegotiation_info is not empty');
    const offered = new Set(this.#hello.cipherSuites);
    const groupsOk = this.#hello.supportedGroups === undefined || this.#hello.supportedGroups.includes(SECP256R1);
    const signaturesOk = this.#hello.signatureAlgorithms === undefined || this.#hello.signatureAlgorithms.includes(ECDSA_SHA256);
    for (const id of SERVER_PREFERENCE) {
      const suite = CIPHER_SUITES.get(id);
      if (!suite || !offered.has(id)) continue;
      if (suite.keyExchange === 'psk' && this.#credentials.pskKey) return suite;
      if (suite.keyExchange === 'ecdhe_ecdsa' && this.#credentials.certificate && groupsOk && signaturesOk) return suite;
    }
    throw new HandshakeFailure(AlertDescription.handshake_failure, 'no cipher suite in common');
  }

  #serverHelloBody(sessionId: Buffer): Buffer {
    const extensions: { type: number; data: Buffer }[] = [];
    if (this.#hello.secureRenegotiation) extensions.push({ type: ExtensionType.renegotiationInfo, data: Buffer.from([0]) });
    if (this.#ems) extensions.push({ type: ExtensionType.extendedMasterSecret, data: Buffer.alloc(0) });
    if (this.#hello.connectionId && this.#cidIn) extensions.push({ type: this.#hello.connectionId.extension, data: connectionIdExtension(this.#cidIn) });
    if (this.#suite?.keyExchange === 'ecdhe_ecdsa' && this.#hello.ecPointFormats) extensions.push({ type: ExtensionType.ecPointFormats, data: Buffer.from([1, 0]) });
    return serverHello({ random: this.#serverRandom, sessionId, cipherSuite: this.#suite!.id, extensions });
  }

  #message(msgType: number, body: Buffer, epoch = 0): Outgoing {
    const messageSeq = this.#sendSeq++;
    this.#transcript.push(handshakeHashInput(msgType, messageSeq, body));
    return { kind: 'handshake', msgType, messageSeq, body, epoch };
  }

  #deriveKeys(): { client: ConnectionKeys; server: ConnectionKeys } {
    const suite = this.#suite!;
    return splitKeyBlock(suite, keyBlock(this.#master!, this.#serverRandom, this.#hello.random, keyBlockLength(suite)));
  }

  #hash(): Buffer {
    const hash = createHash('sha256');
    for (const part of this.#transcript) hash.update(part);
    return hash.digest();
  }

  #cidOut(): Buffer | undefined {
    const theirs = this.#hello.connectionId?.cid;
    return this.#cidIn && theirs && theirs.length > 0 ? theirs : undefined;
  }

  #cidFormat(): 'rfc9146' | 'draft05' {
    return this.#hello.connectionId?.extension === ExtensionType.connectionIdDraft ? 'draft05' : 'rfc9146';
  }
}
