import { hash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { ConcurrencyGate } from './gate.js';

/** A new bearer token: the kind's prefix (`AT:` or `UT:`) and 192 random bits, URL-safe. */
export function newTokenSecret(prefix: 'AT:' | 'UT:'): string {
  return prefix + randomBytes(24).toString('base64url');
}

/**
 * How a token is stored. Tokens carry 192 random bits, so a fast hash is enough to make a stolen
 * database useless; a slow KDF here would only slow down every request.
 */
export function hashTokenSecret(token: string): string {
  // One-shot: a third of createHash().update().digest()'s time, and it runs on every API request.
  return hash('sha256', token, 'base64url');
}

// scrypt with N=2^15, r=8, p=1: about 32 MiB and tens of milliseconds per hash (OWASP's minimum is 2^17 with
// r=8 p=1 for ~128 MiB; this trades some strength for logins that stay fast on a two-core box).
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;

/**
 * scrypt runs on libuv's thread pool (4 threads, shared with file and DNS work): at most 2 checks run at once,
 * so a flood of log-ins cannot starve the rest of the process, and at most 256 wait (`IOTB_AUTH_BUSY` after).
 */
const scryptGate = new ConcurrencyGate(2, 256, 'IOTB_AUTH_BUSY');

function scryptAsync(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return scryptGate.run(
    () =>
      new Promise<Buffer>((resolve, reject) => {
        scrypt(password, salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key)));
      }),
  );
}

/** `scrypt$N$r$p$salt$hash`, salt and hash base64url; the parameters travel with the hash so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await scryptAsync(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash to check against when no user matches, so a login takes as long whether the email exists or not. */
export const DUMMY_PASSWORD_HASH = 'scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
