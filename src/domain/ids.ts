import { randomFillSync } from 'node:crypto';

// Entropy is drawn from the OS 4 KiB at a time: one system call per 341 ids instead of one per id
// (ids are made for every event and every trigger execution).
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

/**
 * `bytes` random bytes (a few: at most the pool's 4,096) as text, drawn from the pool: `crypto.randomBytes` costs
 * a system call each, 4–7 % of an LwM2M Register's time where registration ids and request tokens were made with it.
 */
export function randomText(bytes: number, encoding: 'hex' | 'base64url'): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const text = POOL.toString(encoding, offset, offset + bytes);
  offset += bytes;
  return text;
}

/**
 * A new opaque identifier: 16 URL-safe characters (96 random bits). Never contains `.` or `:`,
 * so it can't be mistaken for a `k.<key>` reference or the `:<accountId>` suffix of a bearer token.
 */
export function newId(): string {
  return randomText(12, 'base64url');
}

// 64 URL-safe characters in ASCII order, so that strings of them sort like the numbers they encode.
const ORDERED = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';

// The time part of the last sortable id made: many are made to the millisecond under load.
let prefixMs = Number.NaN;
let prefix = '';

/**
 * Like {@link newId}, but ids made later sort after earlier ones (to the millisecond): 7 characters of
 * time, then 9 random (54 bits). For rows written at a high rate (events, executions): their id index
 * grows at one end instead of touching a random page per insert.
 */
export function newSortableId(now = Date.now()): string {
  if (now !== prefixMs) {
    let time = '';
    for (let i = 0, t = now; i < 7; i++, t = Math.floor(t / 64)) time = ORDERED[t % 64]! + time;
    prefix = time;
    prefixMs = now;
  }
  return prefix + newId().slice(0, 9);
}
