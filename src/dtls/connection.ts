import type { Peer } from '../coap/transport.js';
import type { RecordProtection } from './cipher-suites.js';
import { HandshakeReassembler, serializeHandshake } from './handshake-messages.js';
import type { Established, Outgoing, ServerHandshake } from './handshake.js';
import { ContentType, DTLS_1_2, ReplayWindow, serializeRecord } from './records.js';

/** Largest datagram the server sends during a handshake (RFC 6347 4.1.1.1: stay under the path MTU; IPv6 minimum 1280). */
const MAX_DATAGRAM = 1200;
/** Handshake message fragments fit a record in such a datagram. */
const MAX_FRAGMENT = MAX_DATAGRAM - 13 - 12 - 64;

/**
 * One DTLS association with a client: the handshake while it runs, then the keys of epoch 1, record sequence
 * numbers, the replay window, and the server's last flight (sent again when the client repeats its own,
 * RFC 6347 4.2.4).
 */
export class DtlsConnection {
  peer: Peer;
  handshake: ServerHandshake | undefined;
  readonly reassembler = new HandshakeReassembler();
  established: Established | undefined;
  /** Epoch-1 keys of the client's records, from its ChangeCipherSpec on. */
  readProtection: RecordProtection | undefined;
  writeProtection: RecordProtection | undefined;
  /** The client's CID, put on our records from epoch 1 on (RFC 9146 / draft-05); undefined: none. */
  cidOut: Buffer | undefined;
  /** Our CID on the client's records. */
  cidIn: Buffer | undefined;
  readonly replay = new ReplayWindow();
  /** The server's last flight, kept to send again. */
  lastFlight: Outgoing[] = [];
  /** Retransmission of the last flight while the client's answer is awaited. */
  flightTimer: NodeJS.Timeout | undefined;
  flightTimeoutMs = 1000;
  /** Records of one connection are handled one after another (key look-ups are asynchronous). */
  chain: Promise<void> = Promise.resolve();
  lastHeard = Date.now();
  /** When the last flight was last sent again for an unauthenticated repeat (rate limit). */
  lastResend = 0;
  /** Addresses it had before (Connection ID moves), newest last, a few at most. */
  readonly formerAddresses: string[] = [];
  readonly startedAt = Date.now();
  #writeSeq = [0n, 0n];

  /**
   * `firstSeq`: the record sequence number of the ClientHello that started it. Our epoch-0 records count on
   * from there: the HelloVerifyRequest took the first ClientHello's number (RFC 6347 4.2.1), and a client drops
   * a record whose number it has seen as a replay.
   */
  constructor(peer: Peer, firstSeq = 0n) {
    this.peer = peer;
    this.#writeSeq[0] = firstSeq;
  }

  /** The datagrams of a flight: handshake messages fragmented into records, packed up to the datagram size. */
  flightDatagrams(flight: readonly Outgoing[]): Buffer[] {
    const records: Buffer[] = [];
    for (const item of flight) {
      if (item.kind === 'ccs') {
        records.push(this.record(ContentType.changeCipherSpec, Buffer.from([1]), 0));
        continue;
      }
      for (const fragment of serializeHandshake(item.msgType, item.messageSeq, item.body, MAX_FRAGMENT)) records.push(this.record(ContentType.handshake, fragment, item.epoch));
    }
    const datagrams: Buffer[] = [];
    let current: Buffer[] = [];
    let size = 0;
    for (const record of records) {
      if (size + record.length > MAX_DATAGRAM && current.length > 0) {
        datagrams.push(Buffer.concat(current));
        current = [];
        size = 0;
      }
      current.push(record);
      size += record.length;
    }
    if (current.length > 0) datagrams.push(Buffer.concat(current));
    return datagrams;
  }

  /** One record of ours, with the next sequence number of its epoch (protected from epoch 1 on). */
  record(contentType: number, content: Buffer, epoch: number): Buffer {
    const sequenceNumber = this.#writeSeq[epoch]!++;
    if (epoch === 0) return serializeRecord({ contentType, version: DTLS_1_2, epoch, sequenceNumber, fragment: content });
    const protection = this.writeProtection;
    if (!protection) throw new Error('no write keys for epoch 1');
    const cid = this.cidOut?.length ? this.cidOut : undefined;
    const header = { contentType, version: DTLS_1_2, epoch, sequenceNumber, ...(cid && { cid }) };
    return serializeRecord({ ...header, ...(cid && { contentType: ContentType.tls12Cid }), fragment: protection.encrypt(header, content) });
  }

  stopFlightTimer(): void {
    clearTimeout(this.flightTimer);
    this.flightTimer = undefined;
  }
}
