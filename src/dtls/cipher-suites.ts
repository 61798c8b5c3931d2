// DTLS 1.2 cipher suites and record payload protection (RFC 5246 6.2.3 with the DTLS sequence number of
// RFC 6347 4.1.2.1), including the Connection ID record forms of RFC 9146 5 and its predecessor
// draft-ietf-tls-dtls-connection-id-05 5 (what mbedTLS 2.x, extension type 254, speaks).
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ContentType, MAX_CID_LENGTH, MAX_SEQUENCE_NUMBER } from './records.js';

export type CipherName = 'aes-128-ccm-8' | 'aes-128-cbc-sha256' | 'aes-128-gcm' | 'aes-128-ccm';

export interface CipherSuite {
  id: number;
  name: string;
  keyExchange: 'psk' | 'ecdhe_ecdsa';
  cipher: CipherName;
  /** SecurityParameters of RFC 5246 6.1 / A.6. */
  macKeyLength: number;
  encKeyLength: number;
  fixedIvLength: number;
  recordIvLength: number;
  /** Authenticator bytes at the end of the protected payload: AEAD tag, or HMAC-SHA256 output for CBC. */
  tagLength: number;
}

// TLS 1.2 AEAD suites: 4-byte salt from the key block, 8-byte explicit nonce per record (RFC 5288 3, RFC 6655 3).
function aead(id: number, name: string, keyExchange: CipherSuite['keyExchange'], cipher: CipherName, tagLength: number): CipherSuite {
  return { id, name, keyExchange, cipher, macKeyLength: 0, encKeyLength: 16, fixedIvLength: 4, recordIvLength: 8, tagLength };
}
// TLS 1.2 CBC suites: HMAC-SHA256 key and a random explicit 16-byte IV per record (RFC 5246 6.2.3.2).
function cbc(id: number, name: string, keyExchange: CipherSuite['keyExchange']): CipherSuite {
  return { id, name, keyExchange, cipher: 'aes-128-cbc-sha256', macKeyLength: 32, encKeyLength: 16, fixedIvLength: 0, recordIvLength: 16, tagLength: 32 };
}

const SUITES: CipherSuite[] = [
  aead(0xc0a8, 'TLS_PSK_WITH_AES_128_CCM_8', 'psk', 'aes-128-ccm-8', 8), // RFC 6655 4
  aead(0xc0a4, 'TLS_PSK_WITH_AES_128_CCM', 'psk', 'aes-128-ccm', 16), // RFC 6655 4
  aead(0x00a8, 'TLS_PSK_WITH_AES_128_GCM_SHA256', 'psk', 'aes-128-gcm', 16), // RFC 5487 3
  cbc(0x00ae, 'TLS_PSK_WITH_AES_128_CBC_SHA256', 'psk'), // RFC 5487 4
  aead(0xc0ae, 'TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8', 'ecdhe_ecdsa', 'aes-128-ccm-8', 8), // RFC 7251 2
  aead(0xc0ac, 'TLS_ECDHE_ECDSA_WITH_AES_128_CCM', 'ecdhe_ecdsa', 'aes-128-ccm', 16), // RFC 7251 2
  aead(0xc02b, 'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'ecdhe_ecdsa', 'aes-128-gcm', 16), // RFC 5289 3.2
  cbc(0xc023, 'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256', 'ecdhe_ecdsa'), // RFC 5289 3.1
];

export const CIPHER_SUITES: ReadonlyMap<number, CipherSuite> = new Map(SUITES.map((suite) => [suite.id, Object.freeze(suite)]));

/** CCM_8 first: the suites LwM2M makes mandatory for PSK and certificate mode (OMA LwM2M Transport, DTLS); then AEAD before CBC. */
export const SERVER_PREFERENCE: readonly number[] = Object.freeze([0xc0a8, 0xc0ae, 0xc0a4, 0xc0ac, 0x00a8, 0xc02b, 0x00ae, 0xc023]);

export interface ConnectionKeys {
  writeKey: Buffer;
  /** The AEAD salt (fixed_iv_length bytes); empty for CBC, whose IV travels in each record. */
  writeIv: Buffer;
  /** Empty for AEAD suites. */
  macKey: Buffer;
}

export function keyBlockLength(suite: CipherSuite): number {
  return 2 * (suite.macKeyLength + suite.encKeyLength + suite.fixedIvLength);
}

/** RFC 5246 6.3 order: client MAC, server MAC, client key, server key, client IV, server IV. */
export function splitKeyBlock(suite: CipherSuite, keyBlock: Buffer): { client: ConnectionKeys; server: ConnectionKeys } {
  if (keyBlock.length < keyBlockLength(suite)) throw new RangeError(`key block of ${keyBlock.length} bytes, ${suite.name} needs ${keyBlockLength(suite)}`);
  let offset = 0;
  const take = (n: number): Buffer => Buffer.from(keyBlock.subarray(offset, (offset += n)));
  const clientMac = take(suite.macKeyLength);
  const serverMac = take(suite.macKeyLength);
  const clientKey = take(suite.encKeyLength);
  const serverKey = take(suite.encKeyLength);
  const clientIv = take(suite.fixedIvLength);
  const serverIv = take(suite.fixedIvLength);
  return {
    client: { writeKey: clientKey, writeIv: clientIv, macKey: clientMac },
    server: { writeKey: serverKey, writeIv: serverIv, macKey: serverMac },
  };
}

export interface RecordHeader {
  /** The real content type; with a CID, 25 means `plaintext` already is a DTLSInnerPlaintext (see encrypt). */
  contentType: number;
  /** Wire version, normally 0xfefd; it is authenticated as sent. */
  version: number;
  epoch: number;
  /** 48 bits. */
  sequenceNumber: bigint;
  /** Non-empty: the record is tls12_cid (RFC 9146 4). Empty or absent: the RFC 6347 record (RFC 9146 3). */
  cid?: Buffer;
}

export type CidFormat = 'rfc9146' | 'draft05';

export interface RecordProtection {
  /**
   * The protected fragment: explicit nonce + ciphertext + tag (AEAD), or IV + CBC(content + MAC + padding).
   * With a CID the payload is a DTLSInnerPlaintext: built here from `plaintext` and header.contentType,
   * or taken as is when header.contentType is tls12_cid (25). Throws RangeError on values that cannot be sent.
   */
  encrypt(header: RecordHeader, plaintext: Buffer): Buffer;
  /** The protected payload (with a CID: the DTLSInnerPlaintext, see parseInnerPlaintext), or undefined; never throws. */
  decrypt(header: RecordHeader, fragment: Buffer): Buffer | undefined;
  /** decrypt() plus, for CID records, unwrapping of the DTLSInnerPlaintext into its real type and content. */
  open(header: RecordHeader, fragment: Buffer): { content: Buffer; type: number } | undefined;
}

/** Largest (inner) plaintext a record may carry (RFC 6347 4.1; RFC 9146 5 for length_of_DTLSInnerPlaintext). */
export const MAX_PLAINTEXT_LENGTH = 2 ** 14;
const EXPLICIT_NONCE_LENGTH = 8;
const BLOCK = 16;
const SEQ_PLACEHOLDER = Buffer.alloc(8, 0xff);

/** DTLSInnerPlaintext = content || real_type || zeros[padding] (RFC 9146 4). */
export function innerPlaintext(content: Buffer, type: number, padding = 0): Buffer {
  return Buffer.concat([content, Buffer.from([type]), Buffer.alloc(padding)]);
}

/** Strips the zero padding from the end; the last non-zero byte is the real type. Undefined when all zero. */
export function parseInnerPlaintext(buf: Buffer): { content: Buffer; type: number } | undefined {
  let i = buf.length - 1;
  while (i >= 0 && buf[i] === 0) i--;
  if (i < 0) return undefined;
  return { content: buf.subarray(0, i), type: buf[i]! };
}

function nonEmptyCid(header: RecordHeader): Buffer | undefined {
  return header.cid && header.cid.length > 0 ? header.cid : undefined;
}

function headerIsValid(header: RecordHeader): boolean {
  return Number.isInteger(header.epoch) && header.epoch >= 0 && header.epoch <= 0xffff
    && header.sequenceNumber >= 0n && header.sequenceNumber <= MAX_SEQUENCE_NUMBER
    && Number.isInteger(header.version) && header.version >= 0 && header.version <= 0xffff
    && Number.isInteger(header.contentType) && header.contentType >= 0 && header.contentType <= 0xff
    && (header.cid?.length ?? 0) <= MAX_CID_LENGTH;
}

/** The 64-bit seq_num of TLS becomes epoch(2) || sequence_number(6) in DTLS (RFC 6347 4.1.2.1). */
function epochAndSequence(header: RecordHeader): Buffer {
  const out = Buffer.alloc(8);
  out.writeUInt16BE(header.epoch, 0);
  out.writeUIntBE(Number(header.sequenceNumber), 2, 6);
  return out;
}

/**
 * AEAD additional_data, which is also the MAC input that precedes the content for CBC suites:
 * - no CID (RFC 5246 6.2.3.1 / 6.2.3.3): seq_num(8) + type + version + length
 * - 'rfc9146' (RFC 9146 5.1 / 5.3): seq_num_placeholder(8 x 0xff) + tls12_cid + cid_length + tls12_cid + version
 *   + epoch(2) + sequence_number(6) + cid + length_of_DTLSInnerPlaintext
 * - 'draft05' (draft-ietf-tls-dtls-connection-id-05 5.1 / 5.3, as mbedTLS 2.28 builds it):
 *   seq_num(8) + tls12_cid + version + cid + cid_length + length_of_DTLSInnerPlaintext
 * `length` is that of the plaintext (with a CID, of the whole DTLSInnerPlaintext).
 */
export function additionalData(header: RecordHeader, length: number, format: CidFormat = 'rfc9146'): Buffer {
  const seq = epochAndSequence(header);
  const cid = nonEmptyCid(header);
  const u16 = (v: number): Buffer => Buffer.from([v >> 8, v & 0xff]);
  if (!cid) return Buffer.concat([seq, Buffer.from([header.contentType]), u16(header.version), u16(length)]);
  const cidLength = Buffer.from([cid.length]);
  const cidType = Buffer.from([ContentType.tls12Cid]);
  if (format === 'draft05') return Buffer.concat([seq, cidType, u16(header.version), cid, cidLength, u16(length)]);
  return Buffer.concat([SEQ_PLACEHOLDER, cidType, cidLength, cidType, u16(header.version), seq, cid, u16(length)]);
}

export function createProtection(suite: CipherSuite, keys: ConnectionKeys, cid?: { format: CidFormat }): RecordProtection {
  const format: CidFormat = cid?.format ?? 'rfc9146';
  if (keys.writeKey.length !== suite.encKeyLength || keys.writeIv.length !== suite.fixedIvLength || keys.macKey.length !== suite.macKeyLength) {
    throw new RangeError(`key lengths do not fit ${suite.name}`);
  }
  const seal = suite.cipher === 'aes-128-cbc-sha256' ? cbcSeal : aeadSeal;
  const unseal = suite.cipher === 'aes-128-cbc-sha256' ? cbcOpen : aeadOpen;

  const decrypt = (header: RecordHeader, fragment: Buffer): Buffer | undefined => {
    if (!headerIsValid(header)) return undefined;
    try {
      return unseal(suite, keys, header, fragment, format);
    } catch {
      return undefined; // node:crypto throws on a failed tag check; every failure looks the same to the caller
    }
  };

  return {
    encrypt(header, plaintext) {
      if (!headerIsValid(header)) throw new RangeError('record header out of range');
      const withCid = nonEmptyCid(header) !== undefined;
      if (!withCid && header.contentType === ContentType.tls12Cid) throw new RangeError('a tls12_cid record needs a non-empty CID');
      const payload = withCid && header.contentType !== ContentType.tls12Cid ? innerPlaintext(plaintext, header.contentType) : plaintext;
      if (payload.length > MAX_PLAINTEXT_LENGTH) throw new RangeError(`plaintext of ${payload.length} bytes`);
      return seal(suite, keys, header, payload, format);
    },
    decrypt,
    open(header, fragment) {
      const payload = decrypt(header, fragment);
      if (!payload) return undefined;
      if (!nonEmptyCid(header)) return { content: payload, type: header.contentType };
      const inner = parseInnerPlaintext(payload);
      return inner && inner.type !== ContentType.tls12Cid ? inner : undefined;
    },
  };
}

type Seal = (suite: CipherSuite, keys: ConnectionKeys, header: RecordHeader, payload: Buffer, format: CidFormat) => Buffer;
type Unseal = (suite: CipherSuite, keys: ConnectionKeys, header: RecordHeader, fragment: Buffer, format: CidFormat) => Buffer | undefined;

function aeadCipher(suite: CipherSuite, keys: ConnectionKeys, nonce: Buffer, aad: Buffer, length: number, decipher: boolean) {
  const options = { authTagLength: suite.tagLength };
  if (suite.cipher === 'aes-128-gcm') {
    const c = decipher ? createDecipheriv('aes-128-gcm', keys.writeKey, nonce, options) : createCipheriv('aes-128-gcm', keys.writeKey, nonce, options);
    return { c, setAad: () => c.setAAD(aad) };
  }
  const c = decipher ? createDecipheriv('aes-128-ccm', keys.writeKey, nonce, options) : createCipheriv('aes-128-ccm', keys.writeKey, nonce, options);
  return { c, setAad: () => c.setAAD(aad, { plaintextLength: length }) }; // CCM needs the length before any data
}

// Explicit nonce = epoch || sequence number: unique per key because a sequence number is never reused in an
// epoch (RFC 6655 3 and RFC 5288 3 allow the sequence number; RFC 6347 4.1.2.1 defines the DTLS one).
const aeadSeal: Seal = (suite, keys, header, payload, format) => {
  const explicit = epochAndSequence(header);
  const aad = additionalData(header, payload.length, format);
  const { c, setAad } = aeadCipher(suite, keys, Buffer.concat([keys.writeIv, explicit]), aad, payload.length, false);
  setAad();
  const body = Buffer.concat([c.update(payload), c.final()]);
  return Buffer.concat([explicit, body, (c as { getAuthTag(): Buffer }).getAuthTag()]);
};

const aeadOpen: Unseal = (suite, keys, header, fragment, format) => {
  if (fragment.length < EXPLICIT_NONCE_LENGTH + suite.tagLength) return undefined;
  const length = fragment.length - EXPLICIT_NONCE_LENGTH - suite.tagLength;
  if (length > MAX_PLAINTEXT_LENGTH) return undefined;
  // The receiver takes the nonce the sender chose, from the record (RFC 5246 6.2.3.3).
  const nonce = Buffer.concat([keys.writeIv, fragment.subarray(0, EXPLICIT_NONCE_LENGTH)]);
  const aad = additionalData(header, length, format);
  const { c, setAad } = aeadCipher(suite, keys, nonce, aad, length, true);
  (c as { setAuthTag(tag: Buffer): unknown }).setAuthTag(fragment.subarray(fragment.length - suite.tagLength));
  setAad();
  const body = c.update(fragment.subarray(EXPLICIT_NONCE_LENGTH, EXPLICIT_NONCE_LENGTH + length));
  return Buffer.concat([body, c.final()]); // final() throws when the tag does not match
};

// GenericBlockCipher (RFC 5246 6.2.3.2): IV || CBC(content || MAC || padding || padding_length),
// MAC = HMAC-SHA256(mac_key, additional data (see additionalData) || content).
const cbcSeal: Seal = (suite, keys, header, payload, format) => {
  const mac = createHmac('sha256', keys.macKey).update(additionalData(header, payload.length, format)).update(payload).digest();
  const padLength = BLOCK - 1 - ((payload.length + mac.length) % BLOCK);
  const iv = randomBytes(BLOCK);
  const c = createCipheriv('aes-128-cbc', keys.writeKey, iv).setAutoPadding(false);
  const body = Buffer.concat([c.update(Buffer.concat([payload, mac, Buffer.alloc(padLength + 1, padLength)])), c.final()]);
  return Buffer.concat([iv, body]);
};

// No padding oracle (RFC 5246 6.2.3.2 implementation note; Lucky13): the padding is checked without
// branching on it, a bad one counts as zero-length, the MAC is always computed and compared in constant
// time, and the SHA-256 work is topped up to the same amount whatever the padding said. JS cannot promise
// constant time, so this narrows the timing signal rather than removing it; prefer the AEAD suites.
const cbcOpen: Unseal = (suite, keys, header, fragment, format) => {
  const macLength = suite.tagLength;
  const n = fragment.length - BLOCK;
  const minimum = Math.ceil((macLength + 1) / BLOCK) * BLOCK;
  if (n < minimum || n % BLOCK !== 0) return undefined; // public lengths only
  const d = createDecipheriv('aes-128-cbc', keys.writeKey, fragment.subarray(0, BLOCK)).setAutoPadding(false);
  const plain = Buffer.concat([d.update(fragment.subarray(BLOCK)), d.final()]);

  const padLength = plain[n - 1]!;
  // 1 when padding_length + 1 + MAC fit in the record, else 0.
  let good = ((n - padLength - 1 - macLength) >>> 31) ^ 1;
  let bad = 0;
  const checked = Math.min(256, n);
  for (let i = 1; i <= checked; i++) {
    const inPadding = (i - padLength - 2) >> 31; // all ones while i <= padding_length + 1
    bad |= (plain[n - i]! ^ padLength) & inPadding;
  }
  good &= ((bad - 1) >>> 31) & 1; // 1 when bad === 0
  const contentLength = n - 1 - macLength - (padLength & -good);

  const hmac = createHmac('sha256', keys.macKey).update(additionalData(header, contentLength, format));
  const expected = hmac.update(plain.subarray(0, contentLength)).digest();
  createHash('sha256').update(plain.subarray(0, n - 1 - macLength - contentLength)).digest(); // top-up, result unused
  const macOk = timingSafeEqual(expected, plain.subarray(contentLength, contentLength + macLength)) ? 1 : 0;
  if ((good & macOk) !== 1 || contentLength > MAX_PLAINTEXT_LENGTH) return undefined;
  return plain.subarray(0, contentLength);
};
