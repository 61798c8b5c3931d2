import { createHash } from 'node:crypto';
import type { LocalNamespace } from './local.js';
import { bytesArg } from './local.js';

/** CRC-32/ISO-HDLC (zlib, Ethernet): check value of "123456789" is 0xCBF43926. */
const CRC32_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC32_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** CRC-64/XZ (ECMA-182 polynomial, reflected): check value of "123456789" is 0x995DC9BBDF1939FA. */
const CRC64_POLY = 0xc96c5795d7870f42n;
const CRC64_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = BigInt(n);
  for (let k = 0; k < 8; k++) c = c & 1n ? CRC64_POLY ^ (c >> 1n) : c >> 1n;
  return c;
});
const MASK64 = 0xffffffffffffffffn;

export function crc64(bytes: Uint8Array): bigint {
  let crc = MASK64;
  for (const byte of bytes) crc = CRC64_TABLE[Number((crc ^ BigInt(byte)) & 0xffn)]! ^ (crc >> 8n);
  return (crc ^ MASK64) & MASK64;
}

/** Strings hash as UTF-8 text; arrays of byte values as bytes. */
const input = (value: unknown) => bytesArg(value, 'input', { text: typeof value === 'string' });

/** `hash.*`. 64-bit results are strings: JavaScript numbers cannot hold them exactly. */
export const hash: LocalNamespace = {
  /** hash.crc32(input) → unsigned 32-bit number. */
  crc32: ([value]) => crc32(input(value)),
  /** hash.crc64(input) → 16 lower-case hex digits (CRC-64/XZ). */
  crc64: ([value]) => crc64(input(value)).toString(16).padStart(16, '0'),
  /** hash.crc64signed(input) → the same CRC as a signed 64-bit decimal string (as Java's long prints it). */
  crc64signed: ([value]) => BigInt.asIntN(64, crc64(input(value))).toString(),
  /** hash.sha256(input) → 64 lower-case hex digits. */
  sha256: ([value]) => createHash('sha256').update(input(value)).digest('hex'),
};
