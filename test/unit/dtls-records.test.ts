import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContentType, DTLS_1_0, DTLS_1_2, MAX_FRAGMENT_LENGTH, parseRecords, ReplayWindow, serializeRecord, type DtlsRecord } from '../../src/dtls/records.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// Small seeded generator so a failing garbage case can be replayed.
function bytes(seed: number, n: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const hello: DtlsRecord = { contentType: ContentType.handshake, version: DTLS_1_0, epoch: 0, sequenceNumber: 0n, fragment: hex('0100000c0000000000000c') };
const appData: DtlsRecord = { contentType: ContentType.applicationData, version: DTLS_1_2, epoch: 1, sequenceNumber: 0x0102_0304_0506n, fragment: hex('deadbeef') };
const cidRecord: DtlsRecord = { contentType: ContentType.tls12Cid, version: DTLS_1_2, epoch: 1, sequenceNumber: 7n, cid: hex('c0ffee112233'), fragment: hex('0badc0de') };

describe('DTLS records (RFC 6347 4.1, RFC 9146 4)', () => {
  it('writes the RFC 6347 4.1 header byte for byte and reads it back', () => {
    const wire = serializeRecord(appData);
    // type 17 | version fefd | epoch 0001 | seq 010203040506 | length 0004 | fragment
    assert.deepEqual(wire, hex('17 fefd 0001 010203040506 0004 deadbeef'));
    assert.deepEqual(parseRecords(wire, 0), [appData]);
    assert.deepEqual(parseRecords(serializeRecord(hello), 6), [hello], 'DTLS 1.0 record version (first ClientHello) is accepted');
  });

  it('reads every record of a datagram, plain and CID records mixed', () => {
    const datagram = Buffer.concat([serializeRecord(hello), serializeRecord(cidRecord), serializeRecord(appData)]);
    assert.deepEqual(parseRecords(datagram, 6), [hello, cidRecord, appData]);
  });

  it('writes the tls12_cid header with the CID before the length; the draft-05 and RFC 9146 layouts are the same', () => {
    // RFC 9146 4 and draft-ietf-tls-dtls-connection-id-05 4 both define DTLSCiphertext as
    // special_type(25) | version | epoch | sequence_number | cid[cid_length] | length | enc_content;
    // only the MAC/AAD input differs between them (see dtls-cipher-suites.test.ts).
    const wire = serializeRecord(cidRecord);
    assert.deepEqual(wire, hex('19 fefd 0001 000000000007 c0ffee112233 0004 0badc0de'));
    assert.deepEqual(parseRecords(wire, 6), [cidRecord]);
  });

  it('refuses CID records it cannot frame: no CID issued, or a length that does not fit', () => {
    const wire = serializeRecord(cidRecord);
    assert.equal(parseRecords(wire, 0), undefined, 'cidLength 0: a type 25 record cannot be framed');
    assert.equal(parseRecords(wire, 7), undefined, 'one CID byte too many leaves a length past the end');
    assert.equal(parseRecords(Buffer.concat([wire, serializeRecord(appData)]), 0), undefined, 'the rest of the datagram goes with it');
    assert.equal(parseRecords(wire, 256), undefined);
    assert.equal(parseRecords(wire, -1), undefined);
  });

  it('gives undefined for every truncation, except at a record boundary', () => {
    const first = serializeRecord(hello);
    const datagram = Buffer.concat([first, serializeRecord(cidRecord)]);
    for (let n = 0; n < datagram.length; n++) {
      const parsed = parseRecords(datagram.subarray(0, n), 6);
      if (n === first.length) assert.deepEqual(parsed, [hello]);
      else assert.equal(parsed, undefined, `${n} bytes`);
    }
  });

  it('accepts a fragment of 2^14 + 2048 bytes and refuses one byte more', () => {
    const max = serializeRecord({ ...appData, fragment: Buffer.alloc(MAX_FRAGMENT_LENGTH) });
    assert.equal(parseRecords(max, 0)?.[0]?.fragment.length, MAX_FRAGMENT_LENGTH);
    const over = Buffer.concat([max, Buffer.alloc(1)]);
    over.writeUInt16BE(MAX_FRAGMENT_LENGTH + 1, 11);
    assert.equal(parseRecords(over, 0), undefined);
    assert.throws(() => serializeRecord({ ...appData, fragment: Buffer.alloc(MAX_FRAGMENT_LENGTH + 1) }), RangeError);
  });

  it('refuses unknown content types, non-DTLS versions, trailing bytes and empty datagrams', () => {
    const wire = serializeRecord(appData);
    const withType = (t: number) => Buffer.concat([Buffer.from([t]), wire.subarray(1)]);
    assert.equal(parseRecords(withType(0), 0), undefined);
    assert.equal(parseRecords(withType(26), 0), undefined);
    assert.equal(parseRecords(Buffer.concat([wire.subarray(0, 1), hex('0303'), wire.subarray(3)]), 0), undefined, 'a TLS 1.2 version');
    assert.equal(parseRecords(Buffer.concat([wire, hex('17fe')]), 0), undefined, 'a trailing partial header');
    assert.equal(parseRecords(Buffer.alloc(0), 0), undefined);
    assert.deepEqual(parseRecords(serializeRecord({ ...appData, fragment: Buffer.alloc(0) }), 0)?.[0]?.fragment, Buffer.alloc(0));
  });

  it('never throws on garbage', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const garbage = bytes(seed, seed % 90);
      if (seed % 3 === 0 && garbage.length > 3) {
        garbage[0] = 20 + (seed % 6); // plausible type and version, so parsing gets further
        garbage[1] = 0xfe;
        garbage[2] = 0xfd;
      }
      for (const cidLength of [0, 4, 6]) {
        const parsed = parseRecords(garbage, cidLength);
        assert.ok(parsed === undefined || Array.isArray(parsed));
      }
    }
  });

  it('refuses to write headers that cannot be encoded', () => {
    assert.throws(() => serializeRecord({ ...appData, cid: hex('01') }), RangeError, 'a CID on a non-CID type');
    assert.throws(() => serializeRecord({ ...cidRecord, cid: Buffer.alloc(0) }), RangeError, 'type 25 without a CID');
    assert.throws(() => serializeRecord({ ...appData, epoch: 0x10000 }), RangeError);
    assert.throws(() => serializeRecord({ ...appData, sequenceNumber: 2n ** 48n }), RangeError);
    assert.throws(() => serializeRecord({ ...cidRecord, cid: Buffer.alloc(256) }), RangeError);
    assert.deepEqual(serializeRecord({ ...appData, cid: Buffer.alloc(0) }), serializeRecord(appData), 'an empty CID is the RFC 6347 record (RFC 9146 3)');
    assert.deepEqual(parseRecords(serializeRecord({ ...appData, sequenceNumber: 2n ** 48n - 1n }), 0)?.[0]?.sequenceNumber, 2n ** 48n - 1n);
  });
});

describe('DTLS anti-replay window (RFC 6347 4.1.2.6)', () => {
  it('accepts new numbers, refuses duplicates, and does not move until accept()', () => {
    const w = new ReplayWindow();
    assert.equal(w.latest, -1n);
    assert.equal(w.isReplay(0n), false);
    assert.equal(w.isReplay(0n), false, 'checking does not record');
    w.accept(0n);
    assert.equal(w.isReplay(0n), true);
    assert.equal(w.isReplay(1n), false);
    w.accept(5n);
    assert.equal(w.latest, 5n);
    for (const seq of [1n, 2n, 3n, 4n]) assert.equal(w.isReplay(seq), false, `${seq} is late but new`);
    w.accept(3n);
    assert.equal(w.isReplay(3n), true);
    assert.equal(w.isReplay(5n), true);
    assert.equal(w.latest, 5n, 'a late record does not move the window');
  });

  it('keeps 64 numbers: latest - 63 is still in, latest - 64 is too old', () => {
    const w = new ReplayWindow();
    w.accept(100n);
    assert.equal(w.isReplay(37n), false, '100 - 63');
    assert.equal(w.isReplay(36n), true, '100 - 64');
    w.accept(37n);
    assert.equal(w.isReplay(37n), true);
    w.accept(101n); // 37 falls out of the window: still refused, now as too old
    assert.equal(w.isReplay(37n), true);
    assert.equal(w.isReplay(38n), false);
  });

  it('shifts the bitmap on a jump, forgetting what leaves the window', () => {
    const w = new ReplayWindow();
    for (let seq = 0n; seq < 64n; seq++) w.accept(seq);
    w.accept(64n); // shift by 1: 1..64 remembered, 0 too old
    for (let seq = 0n; seq <= 64n; seq++) assert.equal(w.isReplay(seq), true, `${seq}`);
    w.accept(64n + 64n); // shift by exactly 64: only 128 remembered
    assert.equal(w.isReplay(128n), true);
    assert.equal(w.isReplay(65n), false, '128 - 63, never seen');
    assert.equal(w.isReplay(64n), true, 'too old now');
    w.accept(1000n); // shift far past the window
    assert.equal(w.isReplay(1000n), true);
    assert.equal(w.isReplay(999n), false);
    assert.equal(w.isReplay(937n), false);
    assert.equal(w.isReplay(936n), true);
  });

  it('handles the ends of the 48-bit range and resets', () => {
    const w = new ReplayWindow();
    const max = 2n ** 48n - 1n;
    assert.equal(w.isReplay(max), false);
    w.accept(max);
    assert.equal(w.isReplay(max), true);
    assert.equal(w.isReplay(max - 1n), false);
    assert.equal(w.isReplay(max + 1n), true, 'outside the sequence number space');
    assert.equal(w.isReplay(-1n), true);
    w.accept(max + 1n);
    assert.equal(w.latest, max);
    w.reset();
    assert.equal(w.latest, -1n);
    assert.equal(w.isReplay(0n), false);
  });
});
