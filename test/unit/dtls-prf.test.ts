import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extendedMasterSecret, keyBlock, masterSecret, prf, pskPreMasterSecret, verifyData } from '../../src/dtls/prf.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

// Inputs shared by the derivation checks below; the expected values were computed with OpenSSL 3.0.19's
// TLS1-PRF (a second implementation), e.g.
//   openssl kdf -keylen 48 -kdfopt digest:SHA256 -kdfopt hexsecret:<pms> -kdfopt seed:"master secret" \
//     -kdfopt hexseed:<client_random><server_random> TLS1-PRF
const clientRandom = Buffer.from(Array.from({ length: 32 }, (_, i) => i)); // 00..1f
const serverRandom = Buffer.from(Array.from({ length: 32 }, (_, i) => 32 + i)); // 20..3f
const psk = Buffer.from('secretPSK');
// SHA-256("handshake messages"), standing in for a transcript hash.
const sessionHash = hex('6e1b983f2338a681fec9331551f24072641b2c011c693e3410cd95da2d6b5458');
const master = hex('03441a59e769d3f530fba3141d8158fdbc544e1124dacdcd7de93c37d5416f0dc68bde589731008aaf5c66858dc72fbd');

describe('DTLS PRF and key derivation (RFC 5246 5, 6.3, 8.1; RFC 7627; RFC 4279)', () => {
  it('matches the published TLS 1.2 PRF (P_SHA256) test vector', () => {
    // The SHA-256 vector posted to the IETF TLS list (https://www.ietf.org/mail-archive/web/tls/current/msg03416.html),
    // as used in tompetersen/bachelor-thesis Source/jProtocol/src/test/tls/PseudoRandomFunction.java;
    // `openssl kdf TLS1-PRF` gives the same 100 bytes.
    const out = prf(hex('9b be 43 6b a9 40 f0 17 b1 76 52 84 9a 71 db 35'), 'test label', hex('a0 ba 9f 93 6c da 31 18 27 a6 f7 96 ff d5 19 8c'), 100);
    assert.equal(
      out.toString('hex'),
      'e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af'
        + '0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66',
    );
  });

  it('cuts the P_SHA256 stream at any length, shorter outputs being prefixes of longer ones', () => {
    const secret = hex('9bbe436ba940f017b17652849a71db35');
    const seed = hex('a0ba9f936cda311827a6f796ffd5198c');
    const long = prf(secret, 'test label', seed, 100);
    for (const n of [0, 1, 31, 32, 33, 64, 65]) assert.deepEqual(prf(secret, 'test label', seed, n), long.subarray(0, n), `length ${n}`);
    assert.throws(() => prf(secret, 'x', seed, -1), RangeError);
  });

  it('lays out the plain PSK premaster secret as RFC 4279 2 says', () => {
    // uint16 N, N zero bytes, uint16 N, the PSK.
    assert.deepEqual(pskPreMasterSecret(psk), hex('0009 000000000000000000 0009 73656372657450534b'));
    assert.deepEqual(pskPreMasterSecret(Buffer.alloc(0)), hex('0000 0000'));
  });

  it('puts the ECDH secret in other_secret for ECDHE_PSK (RFC 5489 2)', () => {
    const z = Buffer.from(Array.from({ length: 32 }, (_, i) => 0xa0 + i));
    assert.deepEqual(pskPreMasterSecret(psk, z), Buffer.concat([hex('0020'), z, hex('0009'), psk]));
    assert.throws(() => pskPreMasterSecret(Buffer.alloc(0x10000)), RangeError);
  });

  it('derives the master secret from client random then server random (RFC 5246 8.1)', () => {
    const ms = masterSecret(pskPreMasterSecret(psk), clientRandom, serverRandom);
    assert.deepEqual(ms, master);
    assert.notDeepEqual(masterSecret(pskPreMasterSecret(psk), serverRandom, clientRandom), master, 'the order of the randoms matters');
    assert.throws(() => masterSecret(pskPreMasterSecret(psk), clientRandom.subarray(1), serverRandom), RangeError);
  });

  it('derives the extended master secret from the session hash (RFC 7627 4)', () => {
    assert.deepEqual(
      extendedMasterSecret(pskPreMasterSecret(psk), sessionHash),
      hex('a09c3f38112aa021ba14d537e9ca7b26e8e00994b973fe54d4e5f44508659eb0f6b1396152b4d59e79674e68dffea908'),
    );
  });

  it('expands keys from server random then client random (RFC 5246 6.3)', () => {
    const block = keyBlock(master, serverRandom, clientRandom, 96);
    assert.deepEqual(
      block,
      hex('04379f48b525ab8b1216a048b400ef16ae8cfba5b20119a4174ee6056934ef37e043d6a048db3503a720b6f108996097'
        + '936ebb62f2709d31291ef76bf0243c97bd1eadcc7b571efa1a3cceb29b9cc4bb004d9554bab49aebc3668a937470247d'),
    );
    assert.deepEqual(keyBlock(master, serverRandom, clientRandom, 40), block.subarray(0, 40));
    assert.throws(() => keyBlock(master.subarray(1), serverRandom, clientRandom, 40), RangeError);
  });

  it('computes 12 bytes of Finished verify_data per side (RFC 5246 7.4.9)', () => {
    assert.deepEqual(verifyData(master, 'client finished', sessionHash), hex('84f20def3cb6adf2353edac0'));
    assert.deepEqual(verifyData(master, 'server finished', sessionHash), hex('d91c027914e95801f66a4769'));
  });
});
