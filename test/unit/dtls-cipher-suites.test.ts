import assert from 'node:assert/strict';
import { createCipheriv, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  additionalData, CIPHER_SUITES, createProtection, innerPlaintext, keyBlockLength, parseInnerPlaintext, SERVER_PREFERENCE, splitKeyBlock,
  type CidFormat, type CipherSuite, type RecordHeader,
} from '../../src/dtls/cipher-suites.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const suite = (id: number): CipherSuite => CIPHER_SUITES.get(id)!;

// Key blocks from dtls-prf.test.ts: keyBlock(master, server_random, client_random, n) there, computed
// independently with `openssl kdf ... TLS1-PRF`. 40 bytes for the AEAD suites, 96 for the CBC ones.
const aeadKeyBlock = hex('04379f48b525ab8b1216a048b400ef16ae8cfba5b20119a4174ee6056934ef37e043d6a048db3503');
const cbcKeyBlock = hex('04379f48b525ab8b1216a048b400ef16ae8cfba5b20119a4174ee6056934ef37e043d6a048db3503a720b6f108996097'
  + '936ebb62f2709d31291ef76bf0243c97bd1eadcc7b571efa1a3cceb29b9cc4bb004d9554bab49aebc3668a937470247d');
const keysOf = (s: CipherSuite) => splitKeyBlock(s, s.cipher === 'aes-128-cbc-sha256' ? cbcKeyBlock : aeadKeyBlock);

const content = Buffer.from('hello, LwM2M');
const cid = hex('c0ffee');
const plainHeader: RecordHeader = { contentType: 23, version: 0xfefd, epoch: 1, sequenceNumber: 5n };
const cidHeader: RecordHeader = { ...plainHeader, cid };
const FORMATS: (CidFormat | undefined)[] = [undefined, 'rfc9146', 'draft05'];

describe('DTLS cipher suites (RFC 6655, RFC 5487, RFC 5289, RFC 7251)', () => {
  it('lists the suites with their TLS 1.2 security parameters, CCM_8 first', () => {
    assert.deepEqual([...CIPHER_SUITES.keys()].sort((a, b) => a - b), [0x00a8, 0x00ae, 0xc023, 0xc02b, 0xc0a4, 0xc0a8, 0xc0ac, 0xc0ae]);
    assert.equal(suite(0xc0a8).name, 'TLS_PSK_WITH_AES_128_CCM_8');
    assert.equal(suite(0xc0ae).name, 'TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8');
    assert.deepEqual(SERVER_PREFERENCE.slice(0, 2), [0xc0a8, 0xc0ae]);
    assert.deepEqual([...SERVER_PREFERENCE].sort(), [...CIPHER_SUITES.keys()].sort());
    for (const s of CIPHER_SUITES.values()) {
      const cbc = s.cipher === 'aes-128-cbc-sha256';
      assert.deepEqual([s.macKeyLength, s.encKeyLength, s.fixedIvLength, s.recordIvLength], cbc ? [32, 16, 0, 16] : [0, 16, 4, 8], s.name);
      assert.equal(s.tagLength, cbc ? 32 : s.cipher === 'aes-128-ccm-8' ? 8 : 16, s.name);
      assert.equal(keyBlockLength(s), cbc ? 96 : 40);
      assert.equal(s.keyExchange, s.name.startsWith('TLS_PSK_') ? 'psk' : 'ecdhe_ecdsa');
    }
  });

  it('splits the key block in RFC 5246 6.3 order', () => {
    const block = Buffer.from(Array.from({ length: 96 }, (_, i) => i));
    const cbc = splitKeyBlock(suite(0x00ae), block);
    const range = (from: number, to: number) => Buffer.from(Array.from({ length: to - from }, (_, i) => from + i));
    assert.deepEqual(cbc.client, { macKey: range(0, 32), writeKey: range(64, 80), writeIv: Buffer.alloc(0) });
    assert.deepEqual(cbc.server, { macKey: range(32, 64), writeKey: range(80, 96), writeIv: Buffer.alloc(0) });
    const ccm = splitKeyBlock(suite(0xc0a8), block.subarray(0, 40));
    assert.deepEqual(ccm.client, { macKey: Buffer.alloc(0), writeKey: range(0, 16), writeIv: range(32, 36) });
    assert.deepEqual(ccm.server, { macKey: Buffer.alloc(0), writeKey: range(16, 32), writeIv: range(36, 40) });
    assert.throws(() => splitKeyBlock(suite(0x00ae), block.subarray(0, 95)), RangeError);
  });
});

describe('primitives with the parameters the suites use', () => {
  it('AES-CCM, M=8: RFC 3610 section 8, Packet Vector #1', () => {
    const c = createCipheriv('aes-128-ccm', hex('c0c1c2c3c4c5c6c7c8c9cacbcccdcecf'), hex('00000003020100a0a1a2a3a4a5'), { authTagLength: 8 });
    c.setAAD(hex('0001020304050607'), { plaintextLength: 23 });
    const out = Buffer.concat([c.update(hex('08090a0b0c0d0e0f101112131415161718191a1b1c1d1e')), c.final(), c.getAuthTag()]);
    assert.equal(out.toString('hex'), '588c979a61c663d2f066d0c2c0f989806d5f6b61dac38417e8d12cfdf926e0');
  });

  it('AES-CCM with a 12-byte nonce and an 8-byte tag (as CCM_8 in TLS): NIST SP 800-38C Appendix C, Example 3', () => {
    const c = createCipheriv('aes-128-ccm', hex('404142434445464748494a4b4c4d4e4f'), hex('101112131415161718191a1b'), { authTagLength: 8 });
    c.setAAD(hex('000102030405060708090a0b0c0d0e0f10111213'), { plaintextLength: 24 });
    const out = Buffer.concat([c.update(hex('202122232425262728292a2b2c2d2e2f3031323334353637')), c.final(), c.getAuthTag()]);
    assert.equal(out.toString('hex'), 'e3b201a9f5b71a7a9b1ceaeccd97e70b6176aad9a4428aa5484392fbc1b09951');
  });

  it('AES-128-GCM: McGrew-Viega GCM specification, Test Case 4', () => {
    const c = createCipheriv('aes-128-gcm', hex('feffe9928665731c6d6a8f9467308308'), hex('cafebabefacedbaddecaf888'));
    c.setAAD(hex('feedfacedeadbeeffeedfacedeadbeefabaddad2'));
    const p = hex('d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39');
    assert.equal(Buffer.concat([c.update(p), c.final()]).toString('hex'),
      '42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091');
    assert.equal(c.getAuthTag().toString('hex'), '5bc94fbc3221a5db94fae95ae7121a47');
  });

  it('HMAC-SHA-256: RFC 4231 test cases 1 and 2', () => {
    assert.equal(createHmac('sha256', Buffer.alloc(20, 0x0b)).update('Hi There').digest('hex'), 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7');
    assert.equal(createHmac('sha256', 'Jefe').update('what do ya want for nothing?').digest('hex'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});

describe('DTLS record protection (RFC 5246 6.2.3, RFC 6347 4.1.2.1, RFC 9146 5)', () => {
  it('builds the additional data of each record form byte for byte', () => {
    // No CID, RFC 5246 6.2.3.3: seq_num = epoch 0001 + sequence 000000000005 | type 17 | version fefd | length 000c
    assert.deepEqual(additionalData(plainHeader, 12), hex('0001 000000000005  17  fefd  000c'));
    // RFC 9146 5.3: seq_num_placeholder ff x8 | tls12_cid 19 | cid_length 03 | tls12_cid 19 | version fefd
    //   | epoch 0001 | sequence_number 000000000005 | cid c0ffee | length_of_DTLSInnerPlaintext 000d
    assert.deepEqual(additionalData(cidHeader, 13, 'rfc9146'), hex('ffffffffffffffff  19  03  19  fefd  0001 000000000005  c0ffee  000d'));
    // draft-ietf-tls-dtls-connection-id-05 5.3 ("seq_num + tls12_cid + DTLSCipherText.version + cid + cid_length
    //   + length_of_DTLSInnerPlaintext"; mbedTLS 2.28 ssl_extract_add_data_from_record writes the same):
    //   seq_num 0001 000000000005 | tls12_cid 19 | version fefd | cid c0ffee | cid_length 03 | length 000d
    assert.deepEqual(additionalData(cidHeader, 13, 'draft05'), hex('0001 000000000005  19  fefd  c0ffee  03  000d'));
    assert.deepEqual(additionalData({ ...plainHeader, cid: Buffer.alloc(0) }, 12, 'rfc9146'), additionalData(plainHeader, 12), 'an empty CID is no CID');
  });

  // Expected fragments computed with Python `cryptography` 48.0 (AESCCM, AESGCM; CBC + hmac) from the keys of
  // aeadKeyBlock/cbcKeyBlock, the client side, nonce = client_write_IV + epoch + sequence, and the additional data
  // spelled out in the test above: a second implementation of the framing, not a published vector.
  const aeadVectors: [number, CidFormat | undefined, string][] = [
    [0xc0a8, undefined, '00010000000000055e3cdbd527c4e7f80fda2429c37e4772a6b50eaa'],
    [0xc0a8, 'rfc9146', '00010000000000055e3cdbd527c4e7f80fda242926ced33b5ed42618c3'],
    [0xc0a8, 'draft05', '00010000000000055e3cdbd527c4e7f80fda2429265a29ca53446189e3'],
    [0xc0a4, undefined, '00010000000000055e3cdbd527c4e7f80fda2429c59887fa2cb9fa34663d289c6497c996'],
    [0xc0a4, 'rfc9146', '00010000000000055e3cdbd527c4e7f80fda2429267459e4b773f407ab8020a29eace99df1'],
    [0xc0a4, 'draft05', '00010000000000055e3cdbd527c4e7f80fda242926f4d49526897dddc13fc6ea09565ea7b5'],
    [0x00a8, undefined, '0001000000000005dbecc9e59c125e6d61b5c2722ec3ff73cd57854572565d4ef8ba366c'],
    [0x00a8, 'rfc9146', '0001000000000005dbecc9e59c125e6d61b5c2728d9dc2bb031a70cc58ba6acd0354a1b019'],
    [0x00a8, 'draft05', '0001000000000005dbecc9e59c125e6d61b5c2728d505b1726eef7497d0fc2233e0983c428'],
  ];

  it('protects AEAD records exactly as a second implementation does, in all three record forms', () => {
    for (const [id, format, expected] of aeadVectors) {
      const s = suite(id);
      const header = format ? cidHeader : plainHeader;
      const protection = createProtection(s, keysOf(s).client, format ? { format } : undefined);
      assert.equal(protection.encrypt(header, content).toString('hex'), expected, `${s.name} ${format ?? 'no CID'}`);
      // The ECDHE_ECDSA twin uses the same record protection.
      const twin = [...CIPHER_SUITES.values()].find((t) => t.cipher === s.cipher && t.id !== s.id)!;
      assert.equal(createProtection(twin, keysOf(twin).client, format ? { format } : undefined).encrypt(header, content).toString('hex'), expected);
      const wireHeader = format ? { ...header, contentType: 25 } : header;
      assert.deepEqual(protection.decrypt(wireHeader, hex(expected)), format ? innerPlaintext(content, 23) : content);
      assert.deepEqual(protection.open(wireHeader, hex(expected)), { content, type: 23 });
    }
  });

  it('opens CBC records made by a second implementation (IV f0..ff), in all three record forms', () => {
    const vectors: [CidFormat | undefined, string][] = [
      [undefined, 'f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff5edfdf9b3730005f32f6aea85e2fe5e5f94bc61f82b71d72a52e3d22f4444e56933d90b8d2c925c52dd0d8bf3f179a86'],
      ['rfc9146', 'f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff94513f16f179d8f296805afb6f0c1db330d22f7d468b1b20301a0164909df73204abdef6e75b030519b18130fba46d06'],
      ['draft05', 'f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff04a1f6b0103b0e044044262eeaac1c4a41f359fcfbd4d24607ae3b8057bc9a52f435f060c868c9caddf2d3330cefcf31'],
    ];
    for (const id of [0x00ae, 0xc023]) {
      for (const [format, fragment] of vectors) {
        const protection = createProtection(suite(id), keysOf(suite(id)).client, format ? { format } : undefined);
        const header = format ? { ...cidHeader, contentType: 25 } : plainHeader;
        assert.deepEqual(protection.open(header, hex(fragment)), { content, type: 23 }, `${id} ${format ?? 'no CID'}`);
      }
    }
  });

  it('round-trips every suite with and without a CID, and drops any tampering', () => {
    for (const s of CIPHER_SUITES.values()) {
      const { client, server } = keysOf(s);
      for (const format of FORMATS) {
        const tx = createProtection(s, client, format ? { format } : undefined);
        const other = createProtection(s, server, format ? { format } : undefined);
        const header: RecordHeader = format ? { ...cidHeader, contentType: 22 } : { ...plainHeader, contentType: 22 };
        const rx: RecordHeader = format ? { ...header, contentType: 25 } : header;
        for (const length of [0, 1, 15, 16, 31, 32, 100, 2 ** 14 - (format ? 1 : 0)]) {
          const plaintext = Buffer.alloc(length, length & 0xff);
          const fragment = tx.encrypt(header, plaintext);
          const label = `${s.name} ${format ?? 'no CID'} ${length}`;
          assert.deepEqual(tx.open(rx, fragment), { content: plaintext, type: 22 }, label);
          if (length > 100) continue;
          for (let byte = 0; byte < fragment.length; byte += Math.max(1, Math.floor(fragment.length / 7))) {
            const bent = Buffer.from(fragment);
            bent[byte]! ^= 0x01;
            assert.equal(tx.decrypt(rx, bent), undefined, `${label}: bit flipped in byte ${byte}`);
          }
          const last = Buffer.from(fragment);
          last[last.length - 1]! ^= 0x80;
          assert.equal(tx.decrypt(rx, last), undefined, `${label}: last byte`);
          assert.equal(tx.decrypt({ ...rx, sequenceNumber: 6n }, fragment), undefined, `${label}: other sequence number`);
          assert.equal(tx.decrypt({ ...rx, epoch: 2 }, fragment), undefined, `${label}: other epoch`);
          assert.equal(tx.decrypt({ ...rx, version: 0xfeff }, fragment), undefined, `${label}: other version`);
          assert.equal(other.decrypt(rx, fragment), undefined, `${label}: the other direction's keys`);
          if (format) {
            assert.equal(tx.decrypt({ ...rx, cid: hex('c0ffef') }, fragment), undefined, `${label}: other CID`);
            assert.equal(tx.decrypt(plainHeader, fragment), undefined, `${label}: CID stripped`);
            const otherFormat = createProtection(s, client, { format: format === 'rfc9146' ? 'draft05' : 'rfc9146' });
            assert.equal(otherFormat.decrypt(rx, fragment), undefined, `${label}: the other CID format`);
          } else {
            assert.equal(tx.decrypt({ ...rx, contentType: 23 }, fragment), undefined, `${label}: other content type`);
          }
        }
      }
    }
  });

  it('wraps a CID payload as DTLSInnerPlaintext and strips zero padding on the way back (RFC 9146 4)', () => {
    assert.deepEqual(innerPlaintext(hex('0102'), 23, 3), hex('0102 17 000000'));
    assert.deepEqual(parseInnerPlaintext(hex('0102 17 000000')), { content: hex('0102'), type: 23 });
    assert.deepEqual(parseInnerPlaintext(hex('17')), { content: Buffer.alloc(0), type: 23 });
    assert.equal(parseInnerPlaintext(hex('000000')), undefined);
    assert.equal(parseInnerPlaintext(Buffer.alloc(0)), undefined);

    const s = suite(0xc0a8);
    const p = createProtection(s, keysOf(s).client, { format: 'rfc9146' });
    const wire = { ...cidHeader, contentType: 25 };
    const padded = p.encrypt(wire, innerPlaintext(content, 21, 5)); // type 25: the payload is taken as built
    assert.deepEqual(p.open(wire, padded), { content, type: 21 });
    assert.equal(p.open(wire, p.encrypt(wire, Buffer.alloc(4))), undefined, 'an all-zero inner plaintext has no type');
  });

  it('drops CBC records whose padding is wrong even under a valid MAC, and accepts long valid padding', () => {
    const s = suite(0x00ae);
    const keys = keysOf(s).client;
    const p = createProtection(s, keys);
    // content || HMAC || padding; padding bytes chosen by the test.
    const record = (padding: Buffer): Buffer => {
      const mac = createHmac('sha256', keys.macKey).update(additionalData(plainHeader, content.length)).update(content).digest();
      const iv = Buffer.alloc(16, 0x42);
      const c = createCipheriv('aes-128-cbc', keys.writeKey, iv).setAutoPadding(false);
      return Buffer.concat([iv, c.update(Buffer.concat([content, mac, padding])), c.final()]);
    };
    const fill = 16 - ((content.length + 32) % 16); // bytes up to the block boundary, length byte included
    assert.deepEqual(p.decrypt(plainHeader, record(Buffer.alloc(fill, fill - 1))), content);
    assert.deepEqual(p.decrypt(plainHeader, record(Buffer.alloc(fill + 32, fill + 31))), content, 'padding longer than a block (RFC 5246 6.2.3.2)');
    const wrongByte = Buffer.alloc(fill + 16, fill + 15);
    wrongByte[0] = 0;
    assert.equal(p.decrypt(plainHeader, record(wrongByte)), undefined, 'one padding byte off');
    assert.equal(p.decrypt(plainHeader, record(Buffer.concat([Buffer.alloc(fill - 1, 7), hex('ff')]))), undefined, 'padding length past the record');
    assert.equal(p.decrypt(plainHeader, record(Buffer.alloc(fill, fill))), undefined, 'padding length one too long');
  });

  it('never throws on garbage fragments or odd headers', () => {
    for (const s of CIPHER_SUITES.values()) {
      for (const format of FORMATS) {
        const p = createProtection(s, keysOf(s).client, format ? { format } : undefined);
        const header = format ? { ...cidHeader, contentType: 25 } : plainHeader;
        for (let length = 0; length <= 120; length++) {
          assert.equal(p.decrypt(header, Buffer.alloc(length, length)), undefined, `${s.name} ${length} bytes`);
        }
        assert.equal(p.decrypt(header, Buffer.alloc(2 ** 14 + 2048)), undefined);
        assert.equal(p.decrypt({ ...header, sequenceNumber: -1n }, Buffer.alloc(64)), undefined);
        assert.equal(p.decrypt({ ...header, epoch: 70000 }, Buffer.alloc(64)), undefined);
        assert.equal(p.decrypt({ ...header, cid: Buffer.alloc(256) }, Buffer.alloc(64)), undefined);
      }
    }
  });

  it('refuses to protect what cannot be sent', () => {
    const s = suite(0xc0a8);
    const p = createProtection(s, keysOf(s).server);
    assert.throws(() => p.encrypt(plainHeader, Buffer.alloc(2 ** 14 + 1)), RangeError);
    assert.throws(() => p.encrypt(cidHeader, Buffer.alloc(2 ** 14)), RangeError, 'the inner plaintext adds the type byte');
    assert.throws(() => p.encrypt({ ...plainHeader, sequenceNumber: 2n ** 48n }, content), RangeError);
    assert.throws(() => p.encrypt({ ...plainHeader, contentType: 25 }, content), RangeError, 'tls12_cid without a CID');
    assert.throws(() => createProtection(s, { ...keysOf(s).server, writeIv: Buffer.alloc(0) }), RangeError);
  });
});
