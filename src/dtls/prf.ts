// TLS 1.2 key derivation for DTLS 1.2 (RFC 6347 4.2.x reuses RFC 5246 unchanged).
// Every cipher suite we offer uses the SHA-256 PRF (RFC 5246 5, RFC 5487, RFC 5289, RFC 6655, RFC 7251).
import { createHmac } from 'node:crypto';

const MASTER_SECRET_LENGTH = 48;
const VERIFY_DATA_LENGTH = 12;
const RANDOM_LENGTH = 32;

function hmacSha256(key: Buffer, ...data: Buffer[]): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of data) mac.update(part);
  return mac.digest();
}

/**
 * PRF(secret, label, seed) = P_SHA256(secret, label + seed), cut to `length` bytes (RFC 5246 5):
 * A(0) = label + seed, A(i) = HMAC(secret, A(i-1)), output = HMAC(secret, A(1) + label + seed) + HMAC(secret, A(2) + ...) ...
 */
export function prf(secret: Buffer, label: string, seed: Buffer, length: number): Buffer {
  if (!Number.isInteger(length) || length < 0) throw new RangeError(`PRF length ${length}`);
  const labelSeed = Buffer.concat([Buffer.from(label, 'latin1'), seed]);
  const out = Buffer.alloc(length);
  let a: Buffer = labelSeed;
  for (let offset = 0; offset < length; offset += 32) {
    a = hmacSha256(secret, a);
    hmacSha256(secret, a, labelSeed).copy(out, offset);
  }
  return out;
}

function checkLength(name: string, value: Buffer, expected: number): void {
  if (value.length !== expected) throw new RangeError(`${name} must be ${expected} bytes, got ${value.length}`);
}

/** master_secret = PRF(pre_master_secret, "master secret", ClientHello.random + ServerHello.random)[0..47] (RFC 5246 8.1). */
export function masterSecret(preMasterSecret: Buffer, clientRandom: Buffer, serverRandom: Buffer): Buffer {
  checkLength('clientRandom', clientRandom, RANDOM_LENGTH);
  checkLength('serverRandom', serverRandom, RANDOM_LENGTH);
  return prf(preMasterSecret, 'master secret', Buffer.concat([clientRandom, serverRandom]), MASTER_SECRET_LENGTH);
}

/**
 * master_secret = PRF(pre_master_secret, "extended master secret", session_hash)[0..47] (RFC 7627 4).
 * session_hash is the SHA-256 hash of the handshake messages up to and including ClientKeyExchange.
 */
export function extendedMasterSecret(preMasterSecret: Buffer, sessionHash: Buffer): Buffer {
  return prf(preMasterSecret, 'extended master secret', sessionHash, MASTER_SECRET_LENGTH);
}

/**
 * PSK premaster secret (RFC 4279 2): uint16 len + other_secret + uint16 len + psk.
 * Plain PSK: other_secret is psk.length zero bytes. ECDHE_PSK: other_secret is the ECDH shared secret (RFC 5489 2).
 */
export function pskPreMasterSecret(psk: Buffer, otherSecret?: Buffer): Buffer {
  const other = otherSecret ?? Buffer.alloc(psk.length);
  if (psk.length > 0xffff || other.length > 0xffff) throw new RangeError('PSK or other_secret longer than 65535 bytes');
  const out = Buffer.alloc(4 + other.length + psk.length);
  out.writeUInt16BE(other.length, 0);
  other.copy(out, 2);
  out.writeUInt16BE(psk.length, 2 + other.length);
  psk.copy(out, 4 + other.length);
  return out;
}

/**
 * key_block = PRF(master_secret, "key expansion", server_random + client_random) (RFC 5246 6.3).
 * Note the seed order: server random first, unlike the master secret.
 */
export function keyBlock(master: Buffer, serverRandom: Buffer, clientRandom: Buffer, length: number): Buffer {
  checkLength('master secret', master, MASTER_SECRET_LENGTH);
  checkLength('serverRandom', serverRandom, RANDOM_LENGTH);
  checkLength('clientRandom', clientRandom, RANDOM_LENGTH);
  return prf(master, 'key expansion', Buffer.concat([serverRandom, clientRandom]), length);
}

/** verify_data = PRF(master_secret, finished_label, Hash(handshake_messages))[0..11] (RFC 5246 7.4.9). */
export function verifyData(master: Buffer, label: 'client finished' | 'server finished', handshakeHash: Buffer): Buffer {
  checkLength('master secret', master, MASTER_SECRET_LENGTH);
  return prf(master, label, handshakeHash, VERIFY_DATA_LENGTH);
}
