import { verify, type KeyObject } from 'node:crypto';

/** What a licence grants: signed by the vendor, verified here, never trusted unsigned. */
export interface LicencePayload {
  /** Unique per issued licence, for support and audit. */
  readonly id: string;
  readonly licensee: string;
  /** ISO 8601 times. */
  readonly issuedAt: string;
  readonly expiresAt: string;
  readonly limits: LicenceLimits;
}

export interface LicenceLimits {
  /** Endpoints the whole installation may have; unset: no limit. */
  readonly maxEndpoints?: number;
  /** Named optional features the licence switches on. */
  readonly features?: readonly string[];
}

/** Why a licence text was refused: the reason is what `PUT /licence` and the log tell the operator. */
export type Verified = { readonly ok: true; readonly payload: LicencePayload } | { readonly ok: false; readonly reason: string };

/** Longest licence text accepted: a payload of a few hundred bytes and a 64-byte signature, with room. */
export const LICENCE_TEXT_MAX = 16 * 1024;

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Checks a licence text, `base64url(payload JSON).base64url(Ed25519 signature of the payload bytes)`: its
 * form, a signature by one of `keys`, the payload's fields and, at `now`, that it has not expired.
 */
export function verifyLicence(text: string, keys: readonly KeyObject[], now: number): Verified {
  const checked = verifySignature(text, keys);
  if (!checked.ok) return checked;
  const expiresAt = Date.parse(checked.payload.expiresAt);
  if (expiresAt <= now) return { ok: false, reason: `the licence expired at ${new Date(expiresAt).toISOString()}` };
  return checked;
}

/** As {@link verifyLicence} without the expiry check: a stored licence is shown as it is also once expired. */
export function verifySignature(text: string, keys: readonly KeyObject[]): Verified {
  const trimmed = text.trim();
  if (trimmed.length > LICENCE_TEXT_MAX) return malformed(`longer than ${LICENCE_TEXT_MAX} characters`);
  const parts = trimmed.split('.');
  if (parts.length !== 2 || !parts.every((part) => BASE64URL.test(part))) return malformed('expected two base64url parts joined by a dot (payload.signature)');
  const payloadBytes = Buffer.from(parts[0]!, 'base64url');
  const signature = Buffer.from(parts[1]!, 'base64url');
  if (signature.length !== 64) return malformed('the signature is not 64 bytes (Ed25519)');
  // The signature before the content: nothing of an unsigned payload is believed or shown.
  if (!keys.some((key) => verify(null, payloadBytes, key, signature))) return { ok: false, reason: 'the signature does not verify with a trusted key (altered, or signed by another vendor key)' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(payloadBytes.toString('utf8'));
  } catch {
    return malformed('the payload is not JSON');
  }
  const problem = payloadProblem(parsed);
  return problem === undefined ? { ok: true, payload: parsed as LicencePayload } : malformed(problem);
}

function malformed(why: string): Verified {
  return { ok: false, reason: `malformed licence: ${why}` };
}

/** What is wrong with a signed payload's shape, or undefined. Unknown fields are allowed (newer tools). */
function payloadProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the payload is not an object';
  const payload = value as Record<string, unknown>;
  for (const field of ['id', 'licensee'] as const) {
    if (typeof payload[field] !== 'string' || payload[field] === '') return `${field} is missing`;
  }
  for (const field of ['issuedAt', 'expiresAt'] as const) {
    if (typeof payload[field] !== 'string' || Number.isNaN(Date.parse(payload[field]))) return `${field} is not a date`;
  }
  const limits = payload.limits;
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) return 'limits is not an object';
  const { maxEndpoints, features } = limits as Record<string, unknown>;
  if (maxEndpoints !== undefined && !(Number.isInteger(maxEndpoints) && (maxEndpoints as number) >= 0)) return 'limits.maxEndpoints is not a whole number';
  if (features !== undefined && !(Array.isArray(features) && features.every((feature) => typeof feature === 'string'))) return 'limits.features is not a list of names';
  return undefined;
}
