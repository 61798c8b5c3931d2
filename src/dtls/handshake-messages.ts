/**
 * DTLS 1.2 handshake message codecs (RFC 6347 4.2 on RFC 5246 7.4): pure functions over Buffers.
 * Parsers take peer input: they return undefined on anything malformed (decode_error) and never throw; the
 * Buffers they return are views into their input. Serializers throw RangeError on values that cannot be
 * encoded: that is a caller bug, not peer input.
 */

export const DTLS_1_0 = 0xfeff;
export const DTLS_1_2 = 0xfefd;
/** TLS_EMPTY_RENEGOTIATION_INFO_SCSV (RFC 5746 3.3). */
export const EMPTY_RENEGOTIATION_INFO_SCSV = 0x00ff;
/** ECCurveType.named_curve, the only one RFC 8422 5.4 still allows. */
export const NAMED_CURVE_TYPE = 3;

export const HandshakeType = {
  helloRequest: 0, clientHello: 1, serverHello: 2, helloVerifyRequest: 3, certificate: 11, serverKeyExchange: 12,
  certificateRequest: 13, serverHelloDone: 14, certificateVerify: 15, clientKeyExchange: 16, finished: 20,
} as const;

export const ExtensionType = {
  serverName: 0, maxFragmentLength: 1, supportedGroups: 10, ecPointFormats: 11, signatureAlgorithms: 13,
  clientCertificateType: 19, serverCertificateType: 20, encryptThenMac: 22, extendedMasterSecret: 23,
  recordSizeLimit: 28, sessionTicket: 35, connectionId: 54, connectionIdDraft: 254, renegotiationInfo: 0xff01,
} as const;

export const AlertLevel = { warning: 1, fatal: 2 } as const;
/** RFC 5246 7.2, RFC 4279 2 (unknown_psk_identity), RFC 5746 (no_renegotiation), RFC 7507 (inappropriate_fallback). */
export const AlertDescription = {
  close_notify: 0, unexpected_message: 10, bad_record_mac: 20, record_overflow: 22, decompression_failure: 30, handshake_failure: 40,
  bad_certificate: 42, unsupported_certificate: 43, certificate_revoked: 44, certificate_expired: 45, certificate_unknown: 46,
  illegal_parameter: 47, unknown_ca: 48, access_denied: 49, decode_error: 50, decrypt_error: 51, protocol_version: 70,
  insufficient_security: 71, internal_error: 80, inappropriate_fallback: 86, user_canceled: 90, no_renegotiation: 100,
  unsupported_extension: 110, unknown_psk_identity: 115,
} as const;

// ---- reading: one shared sentinel, caught only by decode(), so no parser leaks an exception on bad input.
const MALFORMED = new Error('malformed handshake message');

class Reader {
  #at = 0;
  constructor(private readonly buf: Buffer) {}
  get left(): number { return this.buf.length - this.#at; }
  take(n: number): Buffer {
    if (n > this.left) throw MALFORMED;
    this.#at += n;
    return this.buf.subarray(this.#at - n, this.#at);
  }
  uint(bytes: 1 | 2 | 3): number { return this.take(bytes).readUIntBE(0, bytes); }
  /** An opaque vector with a `lenBytes` length prefix (RFC 5246 4.3), its length within [min, max]. */
  vec(lenBytes: 1 | 2 | 3, min = 0, max = Infinity): Buffer {
    const n = this.uint(lenBytes);
    if (n < min || n > max) throw MALFORMED;
    return this.take(n);
  }
  /** Reads `item` until the buffer ends. */
  all<T>(item: (r: Reader) => T): T[] {
    const out: T[] = [];
    while (this.left > 0) out.push(item(this));
    return out;
  }
}

/** Runs `read` over all of `buf`: trailing bytes are malformed too. */
function exact<T>(buf: Buffer, read: (r: Reader) => T): T {
  const r = new Reader(buf);
  const out = read(r);
  if (r.left !== 0) throw MALFORMED;
  return out;
}

function decode<T>(buf: Buffer, read: (r: Reader) => T): T | undefined {
  try {
    return exact(buf, read);
  } catch (error) {
    if (error === MALFORMED) return undefined;
    throw error;
  }
}

/** A list of uint16 (an odd byte count fails on its last read). */
const u16s = (buf: Buffer): number[] => exact(buf, (r) => r.all((x) => x.uint(2)));

/** Extension blocks (RFC 5246 7.4.1.4): optional, at most one of each type. */
function readExtensions(r: Reader): Map<number, Buffer> {
  const map = new Map<number, Buffer>();
  if (r.left === 0) return map;
  for (const [type, data] of exact(r.vec(2), (b) => b.all((x) => [x.uint(2), x.vec(2)] as const))) {
    if (map.has(type)) throw MALFORMED;
    map.set(type, data);
  }
  return map;
}

// ---- writing
function uint(value: number, bytes: 1 | 2 | 3): Buffer {
  if (!Number.isInteger(value) || value < 0 || value >= 2 ** (8 * bytes)) throw new RangeError(`${value} does not fit ${bytes} byte(s)`);
  const out = Buffer.alloc(bytes);
  out.writeUIntBE(value, 0, bytes);
  return out;
}

function vec(data: Buffer, lenBytes: 1 | 2 | 3, min = 0, max = Infinity): Buffer {
  if (data.length < min || data.length > max) throw new RangeError(`vector of ${data.length} bytes outside [${min}, ${max}]`);
  return Buffer.concat([uint(data.length, lenBytes), data]);
}

const u16List = (values: readonly number[]): Buffer => Buffer.concat(values.map((v) => uint(v, 2)));
export interface Extension { type: number; data: Buffer }

/** Omitted entirely when empty, as RFC 5246 7.4.1.3 allows. */
const extensionsBlock = (list: readonly Extension[]): Buffer =>
  list.length === 0 ? Buffer.alloc(0) : vec(Buffer.concat(list.map((e) => Buffer.concat([uint(e.type, 2), vec(e.data, 2)]))), 2);

/** A fixed-size field: random[32], verify_data[12]. */
function fixed(data: Buffer, size: number): Buffer {
  if (data.length !== size) throw new RangeError(`expected ${size} bytes, not ${data.length}`);
  return data;
}

// ---- handshake header and fragments (RFC 6347 4.2.2)
export interface HandshakeFragment { msgType: number; length: number; messageSeq: number; fragmentOffset: number; fragmentLength: number; body: Buffer }

const header = (msgType: number, length: number, messageSeq: number, offset: number, fragmentLength: number): Buffer =>
  Buffer.concat([uint(msgType, 1), uint(length, 3), uint(messageSeq, 2), uint(offset, 3), uint(fragmentLength, 3)]);

/** The handshake fragments of one record (several may share it); an empty record is malformed (RFC 5246 6.2.1). */
export function parseHandshakeFragments(recordFragment: Buffer): HandshakeFragment[] | undefined {
  if (recordFragment.length === 0) return undefined;
  return decode(recordFragment, (r) =>
    r.all((x): HandshakeFragment => {
      const [msgType, length, messageSeq, fragmentOffset, body] = [x.uint(1), x.uint(3), x.uint(2), x.uint(3), x.vec(3)];
      if (fragmentOffset + body.length > length) throw MALFORMED;
      return { msgType, length, messageSeq, fragmentOffset, fragmentLength: body.length, body };
    }),
  );
}

/** Handshake fragments with their 12-byte headers; `maxFragmentLength` counts body bytes per fragment. */
export function serializeHandshake(msgType: number, messageSeq: number, body: Buffer, maxFragmentLength = Infinity): Buffer[] {
  const step = Math.floor(maxFragmentLength);
  if (!(step >= 1)) throw new RangeError('maxFragmentLength must be at least 1');
  const out: Buffer[] = [];
  let offset = 0;
  do {
    const chunk = body.subarray(offset, offset + Math.min(step, body.length - offset));
    out.push(Buffer.concat([header(msgType, body.length, messageSeq, offset, chunk.length), chunk]));
    offset += chunk.length;
  } while (offset < body.length);
  return out;
}

/** The message as the Finished hash sees it: unfragmented, offset 0, its own message_seq (RFC 6347 4.2.6). */
export const handshakeHashInput = (msgType: number, messageSeq: number, body: Buffer): Buffer =>
  Buffer.concat([header(msgType, body.length, messageSeq, 0, body.length), body]);

// ---- reassembly (RFC 6347 4.2.2, 4.2.3)
export interface HandshakeMessage { msgType: number; messageSeq: number; body: Buffer }

/** Defaults: messages up to 16 KiB; 2 × that buffered (never less than 1 ×); 8 messages past nextSeq, more than any flight. */
export interface ReassemblerLimits { maxMessageLength?: number; maxBufferedBytes?: number; maxMessagesAhead?: number }

/** `have`: one bit per body byte, so overlapping fragments count once. */
interface PendingMessage { msgType: number; body: Buffer; have: Uint8Array; received: number }

/** Per-connection reassembly of handshake messages, delivered in message_seq order. */
export class HandshakeReassembler {
  readonly #maxMessageLength: number;
  readonly #maxBufferedBytes: number;
  readonly #maxAhead: number;
  readonly #pending = new Map<number, PendingMessage>();
  #buffered = 0;
  #nextSeq = 0;
  constructor(limits: ReassemblerLimits = {}) {
    this.#maxMessageLength = limits.maxMessageLength ?? 16 * 1024;
    this.#maxBufferedBytes = Math.max(limits.maxBufferedBytes ?? 2 * this.#maxMessageLength, this.#maxMessageLength);
    this.#maxAhead = limits.maxMessagesAhead ?? 8;
  }
  get nextSeq(): number { return this.#nextSeq; }
  /** Moves the expected message_seq (e.g. past a stateless ClientHello), dropping anything older. */
  set nextSeq(seq: number) {
    this.#nextSeq = seq;
    for (const [s, p] of this.#pending) if (s < seq) this.#drop(s, p);
  }
  /** Bytes held for messages not yet delivered. */
  get buffered(): number { return this.#buffered; }
  clear(): void {
    this.#pending.clear();
    this.#buffered = 0;
  }
  /** Adds a fragment; returns the messages it completed, in order. Bad or unaffordable fragments are dropped. */
  add(fragment: HandshakeFragment): HandshakeMessage[] {
    const { msgType, length, messageSeq, fragmentOffset, body } = fragment;
    // Older: a retransmission of something delivered; the caller decides whether to resend its flight (RFC 6347 4.2.4).
    if (messageSeq < this.#nextSeq || messageSeq >= this.#nextSeq + this.#maxAhead) return [];
    if (length > this.#maxMessageLength || body.length !== fragment.fragmentLength || fragmentOffset + body.length > length) return [];
    let p = this.#pending.get(messageSeq);
    if (p && (p.msgType !== msgType || p.body.length !== length)) return [];
    if (!p) {
      if (!this.#makeRoom(messageSeq, length)) return [];
      p = { msgType, body: Buffer.alloc(length), have: new Uint8Array(Math.ceil(length / 8)), received: 0 };
      this.#pending.set(messageSeq, p);
      this.#buffered += length;
    }
    body.copy(p.body, fragmentOffset);
    for (let i = fragmentOffset; i < fragmentOffset + body.length; i++) {
      const byte = p.have[i >> 3] ?? 0;
      const bit = 1 << (i & 7);
      if ((byte & bit) === 0) {
        p.have[i >> 3] = byte | bit;
        p.received++;
      }
    }
    return this.deliverable();
  }
  /** Completed messages from nextSeq on (add() returns them already; useful after setting nextSeq). */
  deliverable(): HandshakeMessage[] {
    const out: HandshakeMessage[] = [];
    for (let p = this.#pending.get(this.#nextSeq); p && p.received === p.body.length; p = this.#pending.get(this.#nextSeq)) {
      this.#drop(this.#nextSeq, p);
      out.push({ msgType: p.msgType, messageSeq: this.#nextSeq, body: p.body });
      this.#nextSeq++;
    }
    return out;
  }
  #drop(seq: number, p: PendingMessage): void {
    this.#pending.delete(seq);
    this.#buffered -= p.body.length;
  }
  /** Evicts messages later than `seq`, latest first, so the one needed next always fits. */
  #makeRoom(seq: number, length: number): boolean {
    while (this.#buffered + length > this.#maxBufferedBytes) {
      const victim = Math.max(...[...this.#pending.keys()].filter((s) => s > seq));
      const p = this.#pending.get(victim);
      if (!p) return false; // nothing later to evict (Math.max of none is -Infinity)
      this.#drop(victim, p);
    }
    return true;
  }
}

// ---- ClientHello (RFC 6347 4.2.1 adds the cookie to RFC 5246 7.4.1.2)
export interface ClientHello {
  version: number; random: Buffer; sessionId: Buffer; cookie: Buffer; cipherSuites: number[]; compressionMethods: number[];
  /** Every extension as sent, in order. */
  extensions: Map<number, Buffer>;
  supportedGroups?: number[]; ecPointFormats?: number[];
  /** uint16 each: hash << 8 | signature (RFC 5246 7.4.1.4.1). */
  signatureAlgorithms?: number[];
  extendedMasterSecret: boolean;
  /** RFC 9146 wins when a client sends both code points. */
  connectionId?: { extension: 54 | 254; cid: Buffer };
  /** renegotiation_info present or the SCSV offered (RFC 5746 3.6). */
  secureRenegotiation: boolean;
  /** renegotiated_connection: must be empty in an initial handshake (RFC 5746 3.6), which the caller checks. */
  renegotiationInfo?: Buffer;
  clientCertificateTypes?: number[]; serverCertificateTypes?: number[]; sessionTicket?: Buffer;
}

const bytes8 = (data: Buffer): number[] => [...exact(data, (r) => r.vec(1, 1))];
const list16 = (data: Buffer): number[] => u16s(exact(data, (r) => r.vec(2, 2)));

/** Typed views of the extensions a server acts on; each must be well-formed when present. */
function applyExtension(hello: ClientHello, type: number, data: Buffer): void {
  const T = ExtensionType;
  if (type === T.supportedGroups) hello.supportedGroups = list16(data); // RFC 8422 5.1.1
  else if (type === T.ecPointFormats) hello.ecPointFormats = bytes8(data); // RFC 8422 5.1.2
  else if (type === T.signatureAlgorithms) hello.signatureAlgorithms = list16(data); // RFC 5246 7.4.1.4.1
  else if (type === T.clientCertificateType) hello.clientCertificateTypes = bytes8(data); // RFC 7250 3
  else if (type === T.serverCertificateType) hello.serverCertificateTypes = bytes8(data);
  else if (type === T.sessionTicket) hello.sessionTicket = data; // RFC 5077 3.2: empty, or a ticket
  else if (type === T.extendedMasterSecret) {
    if (data.length !== 0) throw MALFORMED; // RFC 7627 5.1: extension_data is empty
    hello.extendedMasterSecret = true;
  } else if (type === T.connectionId || type === T.connectionIdDraft) {
    // RFC 9146 3; draft-ietf-tls-dtls-connection-id-05 carries the same body under 254.
    const cid = exact(data, (r) => r.vec(1));
    if (!hello.connectionId || type === T.connectionId) hello.connectionId = { extension: type === T.connectionId ? 54 : 254, cid };
  } else if (type === T.renegotiationInfo) {
    hello.renegotiationInfo = exact(data, (r) => r.vec(1)); // RFC 5746 3.2
    hello.secureRenegotiation = true;
  }
}

export function parseClientHello(body: Buffer): ClientHello | undefined {
  return decode(body, (r) => {
    const [version, random, sessionId, cookie] = [r.uint(2), r.take(32), r.vec(1, 0, 32), r.vec(1)];
    const [cipherSuites, compressionMethods, extensions] = [u16s(r.vec(2, 2)), [...r.vec(1, 1)], readExtensions(r)];
    const secureRenegotiation = cipherSuites.includes(EMPTY_RENEGOTIATION_INFO_SCSV);
    const hello: ClientHello = { version, random, sessionId, cookie, cipherSuites, compressionMethods, extensions, extendedMasterSecret: false, secureRenegotiation };
    for (const [type, data] of extensions) applyExtension(hello, type, data);
    return hello;
  });
}

/** What a stateless cookie covers (RFC 6347 4.2.1): the parameters a client must repeat, not the cookie. */
export const clientHelloCookieInput = (hello: Pick<ClientHello, 'version' | 'random' | 'sessionId' | 'cipherSuites' | 'compressionMethods'>): Buffer =>
  Buffer.concat([uint(hello.version, 2), hello.random, vec(hello.sessionId, 1), vec(u16List(hello.cipherSuites), 2), vec(Buffer.from(hello.compressionMethods), 1)]);

/** A ClientHello body, for clients and tests. */
export const clientHello = (h: { version?: number; random: Buffer; sessionId?: Buffer; cookie?: Buffer; cipherSuites: number[]; compressionMethods?: number[]; extensions?: Extension[] }): Buffer =>
  Buffer.concat([
    uint(h.version ?? DTLS_1_2, 2), fixed(h.random, 32), vec(h.sessionId ?? Buffer.alloc(0), 1, 0, 32), vec(h.cookie ?? Buffer.alloc(0), 1),
    vec(u16List(h.cipherSuites), 2, 2), vec(Buffer.from(h.compressionMethods ?? [0]), 1, 1), extensionsBlock(h.extensions ?? []),
  ]);

// ---- server flight (RFC 5246 7.4.1.3 - 7.4.5, RFC 6347 4.2.1)
/** server_version 1.0 whatever is negotiated later (RFC 6347 4.2.1). */
export const helloVerifyRequest = (cookie: Buffer): Buffer => Buffer.concat([uint(DTLS_1_0, 2), vec(cookie, 1)]);
export const parseHelloVerifyRequest = (body: Buffer): { version: number; cookie: Buffer } | undefined => decode(body, (r) => ({ version: r.uint(2), cookie: r.vec(1) }));

export const serverHello = (h: { random: Buffer; sessionId: Buffer; cipherSuite: number; extensions: Extension[] }): Buffer =>
  Buffer.concat([uint(DTLS_1_2, 2), fixed(h.random, 32), vec(h.sessionId, 1, 0, 32), uint(h.cipherSuite, 2), uint(0, 1), extensionsBlock(h.extensions)]);

export interface ServerHello { version: number; random: Buffer; sessionId: Buffer; cipherSuite: number; compressionMethod: number; extensions: Map<number, Buffer> }
export const parseServerHello = (body: Buffer): ServerHello | undefined =>
  decode(body, (r) => ({ version: r.uint(2), random: r.take(32), sessionId: r.vec(1, 0, 32), cipherSuite: r.uint(2), compressionMethod: r.uint(1), extensions: readExtensions(r) }));

/** connection_id extension_data (RFC 9146 3): uint8 length + cid; an empty cid asks the peer to send none. */
export const connectionIdExtension = (cid: Buffer): Buffer => vec(cid, 1);
export const parseConnectionIdExtension = (data: Buffer): Buffer | undefined => decode(data, (r) => r.vec(1));
/** A server's renegotiation_info in an initial handshake: empty renegotiated_connection (RFC 5746 3.6). */
export const renegotiationInfoExtension = (): Buffer => Buffer.from([0]);
/** A server's ec_point_formats: uncompressed only (RFC 8422 5.2). */
export const ecPointFormatsExtension = (): Buffer => Buffer.from([1, 0]);
/** A server's client/server_certificate_type: the one type chosen (RFC 7250 3). */
export const certificateTypeExtension = (type: number): Buffer => uint(type, 1);

/** RFC 5246 7.4.2: DER certificates, leaf first. */
export const certificate = (chain: Buffer[]): Buffer => vec(Buffer.concat(chain.map((der) => vec(der, 3, 1))), 3);
export const parseCertificate = (body: Buffer): Buffer[] | undefined => decode(body, (r) => exact(r.vec(3), (list) => list.all((x) => x.vec(3, 1))));

/** psk_identity_hint (RFC 4279 2). */
export const serverKeyExchangePsk = (hint: Buffer): Buffer => vec(hint, 2);
export const parseServerKeyExchangePsk = (body: Buffer): { hint: Buffer } | undefined => decode(body, (r) => ({ hint: r.vec(2) }));

/** ServerECDHParams (RFC 8422 5.4): curve_type named_curve, the curve, the point. */
export const ecdheParams = (namedCurve: number, publicPoint: Buffer): Buffer => Buffer.concat([uint(NAMED_CURVE_TYPE, 1), uint(namedCurve, 2), vec(publicPoint, 1, 1)]);

function readEcdheParams(r: Reader): { namedCurve: number; publicPoint: Buffer } {
  if (r.uint(1) !== NAMED_CURVE_TYPE) throw MALFORMED;
  return { namedCurve: r.uint(2), publicPoint: r.vec(1, 1) };
}

/** What the ServerKeyExchange signature covers (RFC 8422 5.4). */
export const ecdheSignedData = (clientRandom: Buffer, serverRandom: Buffer, params: Buffer): Buffer => Buffer.concat([clientRandom, serverRandom, params]);

/** params, then a TLS 1.2 digitally-signed struct (RFC 5246 4.7). */
export const serverKeyExchangeEcdhe = (params: Buffer, signatureAlgorithm: number, signature: Buffer): Buffer => Buffer.concat([params, uint(signatureAlgorithm, 2), vec(signature, 2)]);

/** `params`: the ServerECDHParams bytes, as signed. */
export interface ServerKeyExchangeEcdhe { namedCurve: number; publicPoint: Buffer; params: Buffer; signatureAlgorithm: number; signature: Buffer }
export const parseServerKeyExchangeEcdhe = (body: Buffer): ServerKeyExchangeEcdhe | undefined =>
  decode(body, (r) => {
    const { namedCurve, publicPoint } = readEcdheParams(r);
    return { namedCurve, publicPoint, params: body.subarray(0, 4 + publicPoint.length), signatureAlgorithm: r.uint(2), signature: r.vec(2) };
  });

/** ECDHE_PSK (RFC 5489 2): hint, then unsigned ServerECDHParams. */
export const serverKeyExchangeEcdhePsk = (hint: Buffer, params: Buffer): Buffer => Buffer.concat([vec(hint, 2), params]);
export const parseServerKeyExchangeEcdhePsk = (body: Buffer): { hint: Buffer; namedCurve: number; publicPoint: Buffer } | undefined =>
  decode(body, (r) => ({ hint: r.vec(2), ...readEcdheParams(r) }));

/** `authorities`: DER DistinguishedNames. */
export interface CertificateRequest { certificateTypes: number[]; signatureAlgorithms: number[]; authorities: Buffer[] }

/** RFC 5246 7.4.4. */
export const certificateRequest = (req: CertificateRequest): Buffer =>
  Buffer.concat([vec(Buffer.from(req.certificateTypes), 1, 1), vec(u16List(req.signatureAlgorithms), 2, 2), vec(Buffer.concat(req.authorities.map((dn) => vec(dn, 2, 1))), 2)]);
export const parseCertificateRequest = (body: Buffer): CertificateRequest | undefined =>
  decode(body, (r) => ({ certificateTypes: [...r.vec(1, 1)], signatureAlgorithms: u16s(r.vec(2, 2)), authorities: exact(r.vec(2), (list) => list.all((x) => x.vec(2, 1))) }));
export const serverHelloDone = (): Buffer => Buffer.alloc(0);

/** verify_data is 12 bytes for every TLS 1.2 suite in use (RFC 5246 7.4.9). */
export const finished = (verifyData: Buffer): Buffer => fixed(verifyData, 12);
export const parseFinished = (body: Buffer): Buffer | undefined => (body.length === 12 ? body : undefined);

// ---- client flight (RFC 4279 2, RFC 8422 5.7, RFC 5489 2, RFC 5246 7.4.8)
export const clientKeyExchangePsk = (identity: Buffer): Buffer => vec(identity, 2);
export const parseClientKeyExchangePsk = (body: Buffer): { identity: Buffer } | undefined => decode(body, (r) => ({ identity: r.vec(2) }));
export const clientKeyExchangeEcdhe = (publicPoint: Buffer): Buffer => vec(publicPoint, 1, 1);
export const parseClientKeyExchangeEcdhe = (body: Buffer): { publicPoint: Buffer } | undefined => decode(body, (r) => ({ publicPoint: r.vec(1, 1) }));
export const clientKeyExchangeEcdhePsk = (identity: Buffer, publicPoint: Buffer): Buffer => Buffer.concat([vec(identity, 2), vec(publicPoint, 1, 1)]);
export const parseClientKeyExchangeEcdhePsk = (body: Buffer): { identity: Buffer; publicPoint: Buffer } | undefined =>
  decode(body, (r) => ({ identity: r.vec(2), publicPoint: r.vec(1, 1) }));
export const certificateVerify = (signatureAlgorithm: number, signature: Buffer): Buffer => Buffer.concat([uint(signatureAlgorithm, 2), vec(signature, 2)]);
export const parseCertificateVerify = (body: Buffer): { signatureAlgorithm: number; signature: Buffer } | undefined =>
  decode(body, (r) => ({ signatureAlgorithm: r.uint(2), signature: r.vec(2) }));

// ---- alerts (RFC 5246 7.2)
export const alert = (level: 1 | 2, description: number): Buffer => Buffer.concat([uint(level, 1), uint(description, 1)]);

/** One alert per record, as implementations send them; an unknown level is malformed. */
export function parseAlert(buf: Buffer): { level: 1 | 2; description: number } | undefined {
  const [level, description] = buf;
  if (buf.length !== 2 || (level !== 1 && level !== 2) || description === undefined) return undefined;
  return { level, description };
}
