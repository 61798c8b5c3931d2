// DTLS 1.2 record layer framing (RFC 6347 4.1) with the Connection ID record (RFC 9146 4) and the
// anti-replay window (RFC 6347 4.1.2.6). Pure parsing: no crypto, never throws on input from the wire.

export const ContentType = {
  changeCipherSpec: 20,
  alert: 21,
  handshake: 22,
  applicationData: 23,
  tls12Cid: 25,
} as const;

export const DTLS_1_2 = 0xfefd;
/** Clients may mark the record of their first ClientHello DTLS 1.0 (as in RFC 5246 E.1), so parsing accepts it. */
export const DTLS_1_0 = 0xfeff;

/** type(1) + version(2) + epoch(2) + sequence_number(6) + length(2). */
export const RECORD_HEADER_LENGTH = 13;
/** DTLSCiphertext.length may exceed 2^14 by at most 2048 (RFC 5246 6.2.3, RFC 6347 4.1). */
export const MAX_FRAGMENT_LENGTH = 2 ** 14 + 2048;
export const MAX_SEQUENCE_NUMBER = 2n ** 48n - 1n;
/** The cid<0..2^8-1> of the connection_id extension (RFC 9146 3). */
export const MAX_CID_LENGTH = 255;

export interface DtlsRecord {
  contentType: number;
  version: number;
  epoch: number;
  /** 48-bit record sequence number within the epoch. */
  sequenceNumber: bigint;
  /** Present (non-empty) only on tls12_cid records. */
  cid?: Buffer;
  fragment: Buffer;
}

// heartbeat(24) is listed so a peer's heartbeat does not make the whole datagram look like garbage.
const KNOWN_TYPES = new Set<number>([20, 21, 22, 23, 24, 25]);

/**
 * Every record of one datagram (RFC 6347 4.1.1: several records may share a datagram, none may span two).
 * tls12_cid records carry `cidLength` CID bytes before the length field (RFC 9146 4: the header layout is the
 * same in draft-ietf-tls-dtls-connection-id-05 and RFC 9146; only the MAC/AAD input differs).
 * Without a known CID length such a record cannot be framed, so with cidLength 0 it spoils the datagram.
 * Returns undefined for anything malformed: short header, length past the end, oversized fragment,
 * unknown content type, non-DTLS version (high byte not 0xfe), or an empty datagram.
 * Fragments are views into `datagram`, not copies.
 */
export function parseRecords(datagram: Buffer, cidLength: number): DtlsRecord[] | undefined {
  if (!Number.isInteger(cidLength) || cidLength < 0 || cidLength > MAX_CID_LENGTH) return undefined;
  if (datagram.length === 0) return undefined;
  const records: DtlsRecord[] = [];
  let offset = 0;
  while (offset < datagram.length) {
    if (datagram.length - offset < RECORD_HEADER_LENGTH) return undefined;
    const contentType = datagram[offset]!;
    const version = datagram.readUInt16BE(offset + 1);
    if (!KNOWN_TYPES.has(contentType) || version >> 8 !== 0xfe) return undefined;
    const epoch = datagram.readUInt16BE(offset + 3);
    const sequenceNumber = BigInt(datagram.readUIntBE(offset + 5, 6));
    let cursor = offset + 11;
    let cid: Buffer | undefined;
    if (contentType === ContentType.tls12Cid) {
      if (cidLength === 0) return undefined;
      if (datagram.length - cursor < cidLength + 2) return undefined;
      cid = datagram.subarray(cursor, cursor + cidLength);
      cursor += cidLength;
    }
    const length = datagram.readUInt16BE(cursor);
    cursor += 2;
    if (length > MAX_FRAGMENT_LENGTH || datagram.length - cursor < length) return undefined;
    const record: DtlsRecord = { contentType, version, epoch, sequenceNumber, fragment: datagram.subarray(cursor, cursor + length) };
    if (cid) record.cid = cid;
    records.push(record);
    offset = cursor + length;
  }
  return records;
}

/**
 * One record on the wire. With a non-empty `cid` the record must be tls12_cid and gets the RFC 9146 4
 * header (type, version, epoch, seq, cid, length); an empty cid means the RFC 6347 header (RFC 9146 3).
 * Throws RangeError on values that cannot be encoded: these come from our own code, not from the wire.
 */
export function serializeRecord(record: DtlsRecord): Buffer {
  const { contentType, version, epoch, sequenceNumber, fragment } = record;
  const cid = record.cid && record.cid.length > 0 ? record.cid : undefined;
  if (!Number.isInteger(contentType) || contentType < 0 || contentType > 0xff) throw new RangeError(`content type ${contentType}`);
  if (!Number.isInteger(version) || version < 0 || version > 0xffff) throw new RangeError(`version ${version}`);
  if (!Number.isInteger(epoch) || epoch < 0 || epoch > 0xffff) throw new RangeError(`epoch ${epoch}`);
  if (sequenceNumber < 0n || sequenceNumber > MAX_SEQUENCE_NUMBER) throw new RangeError(`sequence number ${sequenceNumber}`);
  if (fragment.length > MAX_FRAGMENT_LENGTH) throw new RangeError(`fragment of ${fragment.length} bytes`);
  if (cid && cid.length > MAX_CID_LENGTH) throw new RangeError(`CID of ${cid.length} bytes`);
  if (cid && contentType !== ContentType.tls12Cid) throw new RangeError('a record with a CID must be of type tls12_cid (25)');
  if (!cid && contentType === ContentType.tls12Cid) throw new RangeError('a tls12_cid record needs a non-empty CID');
  const cidLength = cid?.length ?? 0;
  const out = Buffer.alloc(RECORD_HEADER_LENGTH + cidLength + fragment.length);
  out[0] = contentType;
  out.writeUInt16BE(version, 1);
  out.writeUInt16BE(epoch, 3);
  out.writeUIntBE(Number(sequenceNumber), 5, 6);
  if (cid) cid.copy(out, 11);
  out.writeUInt16BE(fragment.length, 11 + cidLength);
  fragment.copy(out, RECORD_HEADER_LENGTH + cidLength);
  return out;
}

const WINDOW_SIZE = 64n;
const WINDOW_MASK = (1n << WINDOW_SIZE) - 1n;

/**
 * Anti-replay sliding window for one epoch (RFC 6347 4.1.2.6, the RFC 4303 3.4.3 bitmap).
 * Bit i of the bitmap stands for sequence number `latest - i`. Check with isReplay() before decrypting;
 * call accept() only once the record authenticated, so forged records cannot move the window.
 */
export class ReplayWindow {
  private top = -1n;
  private bitmap = 0n;

  /** True for a sequence number already accepted, too old for the window, or out of the 48-bit range. */
  isReplay(seq: bigint): boolean {
    if (seq < 0n || seq > MAX_SEQUENCE_NUMBER) return true;
    if (seq > this.top) return false;
    const age = this.top - seq;
    if (age >= WINDOW_SIZE) return true;
    return ((this.bitmap >> age) & 1n) === 1n;
  }

  accept(seq: bigint): void {
    if (seq < 0n || seq > MAX_SEQUENCE_NUMBER) return;
    if (seq > this.top) {
      const shift = seq - this.top;
      this.bitmap = shift >= WINDOW_SIZE ? 1n : ((this.bitmap << shift) | 1n) & WINDOW_MASK;
      this.top = seq;
      return;
    }
    const age = this.top - seq;
    if (age < WINDOW_SIZE) this.bitmap |= 1n << age;
  }

  /** Highest accepted sequence number, -1n before any; RFC 9146 6 only moves the peer address for newer records. */
  get latest(): bigint {
    return this.top;
  }

  reset(): void {
    this.top = -1n;
    this.bitmap = 0n;
  }
}
