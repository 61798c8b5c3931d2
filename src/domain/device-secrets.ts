import { createHash, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { verifyPassword } from './secrets.js';
import { WorkGate } from './work-gate.js';
import { AppError } from '../errors.js';

/**
 * How device passwords are stored and checked. A device logs in on every connection, and after a restart a
 * whole fleet does at once, so the check must cost little — unlike a person's sign-in password, which is
 * checked once a day. Two kinds:
 *
 * - Generated secrets (`{"generate": true}`): 192 random bits. Nobody can guess or brute-force them, so a
 *   fast hash (SHA-256, as for API tokens) makes a stolen database as useless as a slow one would, and a
 *   check costs about a microsecond. `sha256$<hash>`.
 * - Passwords people chose: PBKDF2-SHA-512, DEVICE_PBKDF2_ITERATIONS rounds (~5 ms of one core), on libuv's
 *   threads behind a gate that refuses when the wait would be too long. `pbkdf2-sha512$<iterations>$<salt>$<hash>`.
 *   Mosquitto stores PBKDF2-SHA-512 with 101 rounds; this is a hundred times that.
 *
 * Hashes stored before (`scrypt$…`, N=2^15: ~100 ms each) are still checked, and replaced by the current form
 * at the next successful log-in.
 */

/** Random bytes of a generated device secret (base64url: 32 characters). */
const GENERATED_SECRET_BYTES = 24;
/** PBKDF2-SHA-512 rounds for passwords people chose (measured ~5 ms of one core on the 2-core test machine). */
export const DEVICE_PBKDF2_ITERATIONS = 10_000;
const KEY_LENGTH = 32;

/** How long a chosen password's check may expect to wait by default before the device is told to try later. */
export const DEVICE_PASSWORD_MAX_WAIT_MS = 10_000;

/**
 * The line of checks of passwords people chose (PBKDF2, and scrypt for hashes from before): on libuv's pool,
 * at most 2 at once so file and DNS work keep a thread, and no more waiting than fits in `maxWaitMs` at the
 * recent rate (`IOTB_AUTH_BUSY` beyond). One per service process.
 */
export function kdfLine(maxWaitMs = DEVICE_PASSWORD_MAX_WAIT_MS): WorkGate {
  return new WorkGate({ concurrency: 2, maxWaitMs, busyCode: 'IOTB_AUTH_BUSY' });
}

/** A new generated device secret: 192 random bits, URL-safe. */
export function newDeviceSecret(): string {
  return randomBytes(GENERATED_SECRET_BYTES).toString('base64url');
}

/** The stored form of a generated secret. */
export function hashGeneratedSecret(secret: string): string {
  return `sha256$${sha256(secret).toString('base64url')}`;
}

/** Refuses a hash from outside (an import) unless it is a current form with no more PBKDF2 rounds than the service's own. */
export function checkImportedHash(hash: string): void {
  const parts = hash.split('$');
  const base64url = /^[A-Za-z0-9_-]{16,100}$/;
  if (parts[0] === 'sha256' && parts.length === 2 && /^[A-Za-z0-9_-]{43}$/.test(parts[1]!)) return;
  if (parts[0] === 'pbkdf2-sha512' && parts.length === 4) {
    const rounds = Number(parts[1]);
    if (Number.isInteger(rounds) && rounds >= 1000 && rounds <= DEVICE_PBKDF2_ITERATIONS && base64url.test(parts[2]!) && base64url.test(parts[3]!)) return;
  }
  throw new AppError('IOTB_REQUEST_VALIDATION', `a device password hash must be sha256$… or pbkdf2-sha512$<1000–${DEVICE_PBKDF2_ITERATIONS}>$…: set this device's password again instead`);
}

/** The stored form of a password a person chose, made in `line`. */
export async function hashDevicePassword(password: string, line: WorkGate): Promise<string> {
  const salt = randomBytes(16);
  const key = await line.run(() => pbkdf2Async(password, salt, DEVICE_PBKDF2_ITERATIONS));
  return ['pbkdf2-sha512', DEVICE_PBKDF2_ITERATIONS, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Whether `password` matches `stored` (a chosen password's check waits in `line`), and whether `stored` is in a form that should be replaced (`outdated`). */
export async function checkDeviceSecret(password: string, stored: string, line: WorkGate): Promise<{ ok: boolean; outdated: boolean }> {
  const scheme = stored.slice(0, stored.indexOf('$'));
  if (scheme === 'sha256') {
    const expected = Buffer.from(stored.slice('sha256$'.length), 'base64url');
    const actual = sha256(password);
    return { ok: expected.length === actual.length && timingSafeEqual(expected, actual), outdated: false };
  }
  if (scheme === 'pbkdf2-sha512') {
    const [, iterations, salt, hash] = stored.split('$');
    const rounds = Number(iterations);
    if (!salt || !hash || !Number.isInteger(rounds) || rounds < 1) return { ok: false, outdated: false };
    const expected = Buffer.from(hash, 'base64url');
    const key = await line.run(() => pbkdf2Async(password, Buffer.from(salt, 'base64url'), rounds));
    return { ok: key.length === expected.length && timingSafeEqual(key, expected), outdated: rounds !== DEVICE_PBKDF2_ITERATIONS };
  }
  if (scheme === 'scrypt') return { ok: await line.run(() => verifyPassword(password, stored)), outdated: true };
  return { ok: false, outdated: false };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function pbkdf2Async(password: string, salt: Buffer, iterations: number): Promise<Buffer> {
  return new Promise((resolve, reject) => pbkdf2(password, salt, iterations, KEY_LENGTH, 'sha512', (error, key) => (error ? reject(error) : resolve(key))));
}
