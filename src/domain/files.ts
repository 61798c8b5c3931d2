import type { Readable } from 'node:stream';
import { AppError } from '../errors.js';
import { pageRequest, type Page } from './pagination.js';
import { nowIso } from './time.js';

/**
 * The per-account file repository (firmware images, scripts' assets, FOTA packages): named byte contents with
 * metadata. Names are unique per account; every call names the account it acts in, and a file of another
 * account is never seen, read, listed, changed or removed (it answers like a missing one).
 *
 * Contents are stored once per distinct SHA-256 ("blob") however many files of however many accounts hold
 * them, and go when no file refers to them any more. Uploads are streamed: hashed and written as they
 * arrive, never held whole in memory; an upload over its byte limit, or whose source fails, stores nothing.
 * Store implementations: `store/disk-file-store.ts` (embedded: blobs under `<dataDir>/files/`) and
 * `store/pg-file-store.ts` (PostgreSQL: blobs as chunk rows, seen by every node of a cluster).
 */

/**
 * File names.
 *
 * - 1 to {@link FILE_NAME_MAX} characters (Unicode code points), valid Unicode (no lone surrogate);
 * - no control character (U+0000–U+001F, U+007F–U+009F) and no backslash;
 * - `/` separates folders (`firmware/v1.2/app.bin`), so a list by prefix lists a folder: a name neither starts
 *   nor ends with `/`, has no `//`, and no segment is `.` or `..` (which URLs and HTTP clients rewrite).
 *
 * Names are case-sensitive and compared byte for byte (no Unicode normalisation): `a.bin` and `A.bin` are two files.
 */
export const FILE_NAME_MAX = 255;
/** Tags: 1 to 64 characters, no control character; at most 32 per file, duplicates dropped. */
export const FILE_TAG_MAX = 64;
export const FILE_TAGS_MAX = 32;
/** `version`: 1 to 64 characters, no control character. */
export const FILE_VERSION_MAX = 64;
/** `contentType`: a media type (`type/subtype`, parameters allowed), printable ASCII, up to 255 characters. */
export const FILE_CONTENT_TYPE_MAX = 255;
export const FILE_DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** What a caller gives for a new file or a new content of a name. */
export interface FileInput {
  readonly name: string;
  /** Default `application/octet-stream`. */
  readonly contentType?: string | undefined;
  readonly version?: string | null | undefined;
  readonly tags?: readonly string[] | undefined;
  /** Who uploads (a user or token id), recorded as given. */
  readonly createdBy?: string | null | undefined;
}

/** The metadata a store writes with a content: checked, defaults applied, stamped. */
export interface NewFile {
  readonly name: string;
  readonly contentType: string;
  readonly version: string | null;
  readonly tags: readonly string[];
  readonly createdBy: string | null;
  /** ISO time: `createdAt` of a new name, `updatedAt` always. */
  readonly now: string;
}

export interface StoredFile {
  readonly accountId: string;
  readonly name: string;
  /** Bytes. */
  readonly size: number;
  /** SHA-256 of the content, lower-case hex: an ETag, and what a device checks an image against. */
  readonly sha256: string;
  readonly contentType: string;
  readonly version: string | null;
  readonly tags: string[];
  readonly createdBy: string | null;
  readonly createdAt: string;
  /** When the content or the metadata last changed. */
  readonly updatedAt: string;
}

/** `PATCH` of the metadata: absent fields stay; `version: null` clears it; `tags` replaces the list. */
export interface FileMetaPatch {
  readonly contentType?: string | undefined;
  readonly version?: string | null | undefined;
  readonly tags?: readonly string[] | undefined;
}

export interface FileQuery {
  /** Names starting with this, case-sensitively (a folder: `firmware/`). */
  readonly prefix?: string | undefined;
  /** Files having this tag. */
  readonly tag?: string | undefined;
  readonly offset?: number | undefined;
  readonly limit?: number | undefined;
}

/**
 * Bytes to read, inclusive at both ends as in HTTP `Range: bytes=start-end`: `start` defaults to 0, `end` to
 * the last byte and is cut to it. `last` alone asks for the last `last` bytes (`bytes=-500`).
 */
export interface ByteRange {
  readonly start?: number | undefined;
  readonly end?: number | undefined;
  readonly last?: number | undefined;
}

/**
 * An open read: the file as it was when the read began and its bytes `start`..`end` (inclusive; `end` is
 * `start - 1` for a whole empty file). The stream serves that content even if the file is replaced or removed
 * meanwhile (embedded), or fails with `IOTB_FILE_NOT_FOUND` (PostgreSQL, once the old content is gone): it
 * never mixes two contents. Consume or destroy the stream: embedded, it holds the open file.
 */
export interface FileRead {
  readonly file: StoredFile;
  readonly start: number;
  readonly end: number;
  readonly stream: Readable;
}

/** An upload's content: a byte stream (an HTTP request, a file) or any async iterable of byte chunks. */
export type FileContent = Readable | AsyncIterable<Buffer | Uint8Array>;

export interface UploadOptions {
  /** Refuse the upload (`IOTB_FILE_TOO_LARGE`, nothing stored) once more bytes than this arrive. */
  readonly maxBytes: number;
}

export interface ReplacedFile {
  readonly file: StoredFile;
  /** True when the name was new (HTTP 201), false when a content was replaced (200). */
  readonly created: boolean;
}

/** What a crash left behind, removed by {@link FileStore.sweep}. */
export interface FileSweep {
  /** Partial uploads (embedded temp files). */
  readonly temps: number;
  /** Contents no file refers to. */
  readonly blobs: number;
}

/**
 * Storage of the file repository. Every call is scoped to `accountId`. Metadata given to the store is
 * already checked (see {@link Files}); the store enforces `maxBytes`, atomicity and content sharing.
 *
 * Uploads read `content` to its end or to the first error and never destroy it: on `IOTB_FILE_TOO_LARGE`
 * the caller decides what to do with the rest (an HTTP route answers 413 and lets the server discard it).
 */
export interface FileStore {
  /** Stores a new name. `IOTB_FILE_NAME_TAKEN` when the account has it; `IOTB_FILE_TOO_LARGE` over `maxBytes`. */
  put(accountId: string, meta: NewFile, content: FileContent, options: UploadOptions): Promise<StoredFile>;
  /**
   * Stores a content under a name, new or not (HTTP `PUT`), atomically: readers see the old file or the new
   * one, never a mix. Metadata are set as given; a replaced file keeps its `createdAt` and `createdBy`.
   */
  replace(accountId: string, meta: NewFile, content: FileContent, options: UploadOptions): Promise<ReplacedFile>;
  info(accountId: string, name: string): Promise<StoredFile | undefined>;
  /** Ordered by name (code point order on both dialects). */
  list(accountId: string, query: { prefix?: string | undefined; tag?: string | undefined }, page: { offset: number; limit: number }): Promise<Page<StoredFile>>;
  /** Undefined when the account has no such file; `IOTB_FILE_RANGE_NOT_SATISFIABLE` for a range past its end. */
  read(accountId: string, name: string, range?: ByteRange): Promise<FileRead | undefined>;
  /** Undefined when the account has no such file. */
  updateMeta(accountId: string, name: string, patch: FileMetaPatch, now: string): Promise<StoredFile | undefined>;
  /** False when the account has no such file. The content goes when no other file (of any account) holds it. */
  remove(accountId: string, name: string): Promise<boolean>;
  /**
   * Removes what a crash left (embedded: temp files of dead processes; both: contents no file refers to, e.g.
   * after an account was deleted). Runs by itself once before a store's first operation.
   */
  sweep(): Promise<FileSweep>;
}

/** The file repository's rules over a {@link FileStore}: checks, defaults, not-found errors. */
export class Files {
  readonly #store: FileStore;
  readonly #now: () => string;

  constructor(store: FileStore, options: { now?: () => string } = {}) {
    this.#store = store;
    this.#now = options.now ?? nowIso;
  }

  /** A new file. `IOTB_FILE_NAME_TAKEN` when the name is used (checked before reading `content`, and again at the end). */
  async put(accountId: string, input: FileInput, content: FileContent, options: UploadOptions): Promise<StoredFile> {
    const meta = this.#newFile(input);
    checkMaxBytes(options.maxBytes);
    if (await this.#store.info(accountId, meta.name)) throw nameTaken(meta.name);
    return this.#store.put(accountId, meta, content, options);
  }

  /** A new content for a name, or a new name (HTTP `PUT`): see {@link FileStore.replace}. */
  async replace(accountId: string, input: FileInput, content: FileContent, options: UploadOptions): Promise<ReplacedFile> {
    const meta = this.#newFile(input);
    checkMaxBytes(options.maxBytes);
    return this.#store.replace(accountId, meta, content, options);
  }

  async info(accountId: string, name: string): Promise<StoredFile> {
    const file = mayExist(name) ? await this.#store.info(accountId, name) : undefined;
    if (!file) throw notFound(name);
    return file;
  }

  async list(accountId: string, query: FileQuery = {}): Promise<Page<StoredFile>> {
    return this.#store.list(accountId, { prefix: query.prefix || undefined, tag: query.tag || undefined }, pageRequest(query.limit, query.offset));
  }

  /** The whole file, or `range` of it; `IOTB_FILE_RANGE_NOT_SATISFIABLE` when the range starts past the end. */
  async read(accountId: string, name: string, range?: ByteRange): Promise<FileRead> {
    const read = mayExist(name) ? await this.#store.read(accountId, name, range) : undefined;
    if (!read) throw notFound(name);
    return read;
  }

  async updateMeta(accountId: string, name: string, patch: FileMetaPatch): Promise<StoredFile> {
    const checked: FileMetaPatch = {
      ...(patch.contentType !== undefined ? { contentType: checkContentType(patch.contentType) } : {}),
      ...(patch.version !== undefined ? { version: checkVersion(patch.version) } : {}),
      ...(patch.tags !== undefined ? { tags: checkTags(patch.tags) } : {}),
    };
    const file = !mayExist(name)
      ? undefined
      : Object.keys(checked).length === 0
        ? await this.#store.info(accountId, name)
        : await this.#store.updateMeta(accountId, name, checked, this.#now());
    if (!file) throw notFound(name);
    return file;
  }

  async remove(accountId: string, name: string): Promise<void> {
    if (!mayExist(name) || !(await this.#store.remove(accountId, name))) throw notFound(name);
  }

  #newFile(input: FileInput): NewFile {
    const createdBy = input.createdBy ?? null;
    if (createdBy !== null && (typeof createdBy !== 'string' || createdBy.length > 255)) throw invalid('createdBy', 'createdBy is text of up to 255 characters');
    return {
      name: checkFileName(input.name),
      contentType: checkContentType(input.contentType ?? FILE_DEFAULT_CONTENT_TYPE),
      version: checkVersion(input.version ?? null),
      tags: checkTags(input.tags ?? []),
      createdBy,
      now: this.#now(),
    };
  }
}

/** Why `name` is not a valid file name (see {@link FILE_NAME_MAX}), or undefined when it is. */
export function fileNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'a file name is 1 to 255 characters';
  if (name.length > FILE_NAME_MAX * 2 || [...name].length > FILE_NAME_MAX) return `a file name has at most ${FILE_NAME_MAX} characters`;
  if (LONE_SURROGATE.test(name)) return 'a file name is valid Unicode (no lone surrogate)';
  if (CONTROL.test(name)) return 'a file name has no control characters';
  if (name.includes('\\')) return 'a file name has no backslash; folders are separated by "/"';
  if (name.startsWith('/') || name.endsWith('/')) return 'a file name neither starts nor ends with "/"';
  if (name.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) return 'a file name has no "//" and no "." or ".." segment';
  return undefined;
}

export function checkFileName(name: string): string {
  const problem = fileNameProblem(name);
  if (problem) throw invalid('name', problem);
  return name;
}

/**
 * The inclusive byte range to serve of a file of `size` bytes. A whole empty file is `{start: 0, end: -1}`.
 * `IOTB_REQUEST_VALIDATION` for a malformed range; `IOTB_FILE_RANGE_NOT_SATISFIABLE` (details.size) for one
 * that starts past the end (HTTP 416; a CoAP Block2 request past the end).
 */
export function resolveRange(size: number, range: ByteRange = {}): { start: number; end: number } {
  const { start, end, last } = range;
  for (const [field, value] of [['start', start], ['end', end], ['last', last]] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) throw invalid(`range.${field}`, `range.${field} is a whole number ≥ 0`);
  }
  if (last !== undefined) {
    if (start !== undefined || end !== undefined) throw invalid('range', 'a range is start and/or end, or last alone');
    if (last === 0 || size === 0) throw unsatisfiable(size);
    return { start: Math.max(size - last, 0), end: size - 1 };
  }
  if (end !== undefined && start !== undefined && end < start) throw invalid('range', 'range.end is before range.start');
  if (start === undefined && end === undefined) return { start: 0, end: size - 1 };
  const from = start ?? 0;
  if (from >= size) throw unsatisfiable(size);
  return { start: from, end: Math.min(end ?? size - 1, size - 1) };
}

/** The AppError of an upload over its limit. */
export function fileTooLarge(maxBytes: number): AppError {
  return new AppError('IOTB_FILE_TOO_LARGE', `The file is larger than ${maxBytes} bytes: nothing was stored`, { maxBytes });
}

export function nameTaken(name: string): AppError {
  return new AppError('IOTB_FILE_NAME_TAKEN', undefined, { name });
}

// C0, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// RFC 9110 token "/" token, then parameters.
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\x20-\x7e]*)?$/;

function checkContentType(value: string): string {
  if (typeof value !== 'string' || value.length > FILE_CONTENT_TYPE_MAX || !MEDIA_TYPE.test(value)) {
    throw invalid('contentType', 'contentType is a media type such as application/octet-stream (printable ASCII, up to 255 characters)');
  }
  return value;
}

function checkVersion(value: string | null): string | null {
  if (value === null) return null;
  if (!isLabel(value, FILE_VERSION_MAX)) throw invalid('version', `version is 1 to ${FILE_VERSION_MAX} characters without control characters, or null`);
  return value;
}

function checkTags(tags: readonly string[]): string[] {
  if (!Array.isArray(tags)) throw invalid('tags', 'tags is a list of text');
  const unique: string[] = [...new Set<string>(tags)];
  const bad = unique.filter((tag) => !isLabel(tag, FILE_TAG_MAX));
  if (bad.length > 0) throw invalid('tags', `a tag is 1 to ${FILE_TAG_MAX} characters without control characters`, { tags: bad });
  if (unique.length > FILE_TAGS_MAX) throw invalid('tags', `a file has at most ${FILE_TAGS_MAX} tags`);
  return unique;
}

function isLabel(value: unknown, max: number): boolean {
  return typeof value === 'string' && value.length > 0 && [...value].length <= max && !LONE_SURROGATE.test(value) && !CONTROL.test(value);
}

function checkMaxBytes(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new TypeError(`maxBytes must be a whole number ≥ 0, not ${maxBytes}`);
}

/** Names that cannot be stored are not looked up. */
function mayExist(name: string): boolean {
  return typeof name === 'string' && name.length > 0 && name.length <= FILE_NAME_MAX * 2;
}

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field, ...extra });
}

function notFound(name: string): AppError {
  return new AppError('IOTB_FILE_NOT_FOUND', undefined, { name });
}

function unsatisfiable(size: number): AppError {
  return new AppError('IOTB_FILE_RANGE_NOT_SATISFIABLE', undefined, { size });
}
