import { randomBytes } from 'node:crypto';

/**
 * A new opaque identifier: 16 URL-safe characters (96 random bits). Never contains `.` or `:`,
 * so it can't be mistaken for a `k.<key>` reference or the `:<accountId>` suffix of a bearer token.
 */
export function newId(): string {
  return randomBytes(12).toString('base64url');
}
