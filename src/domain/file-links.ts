import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { lruCache } from '../lru.js';
import { AppError } from '../errors.js';
import { resolveRange, type ByteRange, type FileRead, type Files } from './files.js';
import { hashTokenSecret } from './secrets.js';
import { isoTime } from './time.js';

/**
 * Download links: an unguessable token that lets a device fetch one file of an account without a bearer
 * token (HTTP `GET /download/<token>`, CoAP `GET /download/<token>` with Block2), until it expires.
 *
 * A link pins the content its file had when the link was made (SHA-256 and size): it serves exactly those
 * bytes, and once the file is replaced or removed it answers `IOTB_FILE_LINK_STALE` instead, so a device
 * resuming a download never gets a mix of two images nor another image than the one it was sent. Tokens are
 * 192 random bits, base64url (32 characters); only their SHA-256 is stored, as for API tokens.
 */

/** Longest life of a link: 30 days. */
export const FILE_LINK_TTL_MAX_SECONDS = 30 * 24 * 3600;
/** Default life of a link made through the API: 1 hour. */
export const FILE_LINK_TTL_DEFAULT_SECONDS = 3600;

/** A download link. */
export interface FileLink {
  /** The secret: known only in the answer to {@link FileLinks.create}; `''` in a resolved link. */
  readonly token: string;
  readonly accountId: string;
  /** The file's name in its account's repository. */
  readonly name: string;
  /** The content the link serves (lower-case hex), pinned when the link was made. */
  readonly sha256: string;
  /** Its size in bytes. */
  readonly size: number;
  readonly expiresAt: string;
  readonly createdAt: string;
}

/** A link as stored: its token's hash, never the token. Times in ms. */
export interface FileLinkRecord {
  readonly tokenHash: string;
  readonly accountId: string;
  readonly name: string;
  readonly sha256: string;
  readonly size: number;
  readonly expiresAt: number;
  readonly createdAt: number;
  readonly createdBy: string | null;
}

/** Storage of download links (src/store/file-link-store.ts). */
export interface FileLinkStore {
  insert(link: FileLinkRecord): Promise<void>;
  /** The link with this token hash, expired or not; undefined when there is none. */
  find(tokenHash: string): Promise<FileLinkRecord | undefined>;
  /** False when the account has no link with this token hash. */
  remove(accountId: string, tokenHash: string): Promise<boolean>;
  /** Removes every link of a file; returns their token hashes. */
  removeFor(accountId: string, name: string): Promise<string[]>;
  /** Removes the links expired at `now` (ms); returns how many. */
  removeExpired(now: number): Promise<number>;
}

export interface FileLinksOptions {
  /**
   * How long a looked-up link (or the absence of one) is kept in memory, ms; default 5000. A device fetches
   * a file block after block: one store read serves many blocks. Revocation on another node of a cluster takes
   * effect after at most this long (at once on the node that revokes); expiry is checked on every use.
   */
  readonly cacheTtlMs?: number | undefined;
  /** Clock in ms; tests move it. */
  readonly now?: (() => number) | undefined;
}

/** Expired links are removed by the first create or look-up this long after the last sweep (ms). */
const SWEEP_INTERVAL_MS = 60_000;
const TOKEN_BYTES = 24;
/** The shape of a token this class makes: anything else is unknown without a look-up. */
const TOKEN_FORMAT = /^[A-Za-z0-9_-]{32}$/;
/** A looked-up token with no link. */
const NO_LINK = Object.freeze({ missing: true });

/** Download links of repository files: made, looked up, revoked, and read through (see the top of this file). */
export class FileLinks {
  readonly #store: FileLinkStore;
  readonly #files: Files;
  readonly #now: () => number;
  readonly #cache: LRUCache<string, FileLinkRecord | typeof NO_LINK>;
  #lastSweep: number;

  constructor(store: FileLinkStore, files: Files, options: FileLinksOptions = {}) {
    this.#store = store;
    this.#files = files;
    this.#now = options.now ?? Date.now;
    this.#cache = lruCache(10_000, { ttl: Math.max(options.cacheTtlMs ?? 5000, 1) });
    this.#lastSweep = this.#now();
  }

  /**
   * A new link to the account's file `name`, valid `ttlSeconds` (1 s to 30 days), serving the file's current
   * content. The answer is the only place the token appears. `IOTB_FILE_NOT_FOUND` when the account has no such
   * file; `IOTB_REQUEST_VALIDATION` for a ttl out of range.
   *
   * @example
   * const link = await domain.fileLinks.create(accountId, 'firmware/app-1.2.bin', { ttlSeconds: 3600 });
   * downloadUrl(link, { scheme: 'coap', host: 'iot.example.com', port: 5683 }); // coap://iot.example.com/download/<token>
   */
  async create(accountId: string, name: string, options: { ttlSeconds: number; createdBy?: string | null }): Promise<FileLink & { token: string }> {
    const { ttlSeconds } = options;
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > FILE_LINK_TTL_MAX_SECONDS) {
      throw new AppError('IOTB_REQUEST_VALIDATION', `ttlSeconds is a whole number of seconds from 1 to ${FILE_LINK_TTL_MAX_SECONDS} (30 days)`, { field: 'ttlSeconds' });
    }
    const createdBy = options.createdBy ?? null;
    if (createdBy !== null && (typeof createdBy !== 'string' || createdBy.length > 255)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'createdBy is text of up to 255 characters', { field: 'createdBy' });
    }
    const file = await this.#files.info(accountId, name);
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const now = this.#now();
    const record: FileLinkRecord = {
      tokenHash: hashTokenSecret(token),
      accountId,
      name: file.name,
      sha256: file.sha256,
      size: file.size,
      expiresAt: now + ttlSeconds * 1000,
      createdAt: now,
      createdBy,
    };
    await this.#store.insert(record);
    this.#sweepNowAndThen(now);
    return toLink(record, token);
  }

  /** The link a token stands for, with `token: ''`; undefined when unknown, revoked or expired. Never throws for a bad token. */
  async resolve(token: string): Promise<FileLink | undefined> {
    const record = await this.#lookUp(token);
    return record && toLink(record, '');
  }

  /** Revokes a link of the account; false when the account has no link with this token. Takes effect at once on this node. */
  async revoke(accountId: string, token: string): Promise<boolean> {
    if (typeof token !== 'string' || !TOKEN_FORMAT.test(token)) return false;
    const tokenHash = hashTokenSecret(token);
    const removed = await this.#store.remove(accountId, tokenHash);
    this.#cache.delete(tokenHash);
    return removed;
  }

  /** Revokes every link to the account's file `name` (e.g. before it is withdrawn); returns how many there were. */
  async revokeAllFor(accountId: string, name: string): Promise<number> {
    const hashes = await this.#store.removeFor(accountId, name);
    for (const hash of hashes) this.#cache.delete(hash);
    return hashes.length;
  }

  /**
   * The link's content, or `range` of it (see {@link ByteRange}; ranges are of the pinned content).
   * `IOTB_FILE_LINK_INVALID` for an unknown, revoked or expired token; `IOTB_FILE_LINK_STALE` when the file no
   * longer has the content the link was made for (replaced or removed); `IOTB_FILE_RANGE_NOT_SATISFIABLE` for a
   * range that starts past its end. Consume or destroy the stream (see {@link FileRead}).
   */
  async read(token: string, range?: ByteRange): Promise<FileRead> {
    const link = await this.#lookUp(token);
    if (!link) throw new AppError('IOTB_FILE_LINK_INVALID');
    const { start, end } = resolveRange(link.size, range);
    let read: FileRead;
    try {
      read = await this.#files.read(link.accountId, link.name, end < start ? undefined : { start, end });
    } catch (error) {
      // Gone, or a shorter content now: either way not the pinned one.
      if (error instanceof AppError && (error.code === 'IOTB_FILE_NOT_FOUND' || error.code === 'IOTB_FILE_RANGE_NOT_SATISFIABLE')) throw stale(link);
      throw error;
    }
    if (read.file.sha256 !== link.sha256) {
      read.stream.destroy();
      throw stale(link);
    }
    return read;
  }

  async #lookUp(token: string): Promise<FileLinkRecord | undefined> {
    if (typeof token !== 'string' || !TOKEN_FORMAT.test(token)) return undefined;
    const tokenHash = hashTokenSecret(token);
    const now = this.#now();
    let found = this.#cache.get(tokenHash);
    if (found === undefined) {
      found = (await this.#store.find(tokenHash)) ?? NO_LINK;
      this.#cache.set(tokenHash, found);
      this.#sweepNowAndThen(now);
    }
    if (!('tokenHash' in found)) return undefined;
    if (found.expiresAt <= now) {
      this.#cache.set(tokenHash, NO_LINK);
      // Lazily removed; the periodic sweep gets it otherwise.
      this.#store.remove(found.accountId, tokenHash).catch(() => undefined);
      return undefined;
    }
    return found;
  }

  /** Removes expired links in the background, at most once per SWEEP_INTERVAL_MS; a failure is retried next time. */
  #sweepNowAndThen(now: number): void {
    if (now - this.#lastSweep < SWEEP_INTERVAL_MS) return;
    this.#lastSweep = now;
    this.#store.removeExpired(now).catch(() => {
      this.#lastSweep = 0;
    });
  }
}

/** Where a download link is fetched from: scheme, host and port as devices reach this service. */
export interface DownloadTarget {
  readonly scheme: 'http' | 'https' | 'coap' | 'coaps';
  /** Host name or address; an IPv6 address is bracketed in the URL (given with or without brackets). */
  readonly host: string;
  readonly port: number;
  /** Append the file's name (each segment percent-encoded) after the token: `/download/<token>/firmware/app.bin`. Default false. */
  readonly appendFileName?: boolean | undefined;
  /** Write the port even when it is the scheme's default (80, 443, 5683, 5684). Default false. */
  readonly includePortInUrl?: boolean | undefined;
}

const DEFAULT_PORTS: Readonly<Record<DownloadTarget['scheme'], number>> = { http: 80, https: 443, coap: 5683, coaps: 5684 };

/**
 * The URL of a download link: `<scheme>://<host>[:<port>]/download/<token>[/<name>]`. The port is left out
 * when it is the scheme's default unless `includePortInUrl`; the name (`appendFileName`, SPEC FOTA options)
 * only helps devices that want a file name at the end of a URL: the token alone selects the file.
 *
 * @example
 * downloadUrl({ token, name: 'fw/app 1.bin' }, { scheme: 'http', host: '::1', port: 8080, appendFileName: true });
 * // http://[::1]:8080/download/<token>/fw/app%201.bin
 */
export function downloadUrl(link: { readonly token: string; readonly name: string }, target: DownloadTarget): string {
  const { scheme, port } = target;
  const host = target.host.includes(':') && !target.host.startsWith('[') ? `[${target.host}]` : target.host;
  const showPort = target.includePortInUrl === true || port !== DEFAULT_PORTS[scheme];
  const name = target.appendFileName === true ? '/' + link.name.split('/').map(encodeURIComponent).join('/') : '';
  return `${scheme}://${host}${showPort ? `:${port}` : ''}/download/${link.token}${name}`;
}

function toLink(record: FileLinkRecord, token: string): FileLink {
  return {
    token,
    accountId: record.accountId,
    name: record.name,
    sha256: record.sha256,
    size: record.size,
    expiresAt: isoTime(record.expiresAt),
    createdAt: isoTime(record.createdAt),
  };
}

function stale(link: FileLinkRecord): AppError {
  return new AppError('IOTB_FILE_LINK_STALE', undefined, { name: link.name });
}
