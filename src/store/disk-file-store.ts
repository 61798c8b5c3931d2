import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import { fileTooLarge, resolveRange, type ByteRange, type FileContent, type FileMetaPatch, type FileRead, type FileStore, type FileSweep, type NewFile, type ReplacedFile, type StoredFile, type UploadOptions } from '../domain/files.js';
import type { Page } from '../domain/pagination.js';
import { blobHeld, deleteFileRow, emptyStream, fileRow, heldBlobs, listFileRows, updateFileMeta, uploadChunks, writeFileRow } from './file-rows.js';
import type { Schema } from './schema.js';

/** Upload temp files: `.upload-<pid>-<boot>-<uuid>`, beside the blobs (a rename within one directory is atomic). */
const TEMP_PREFIX = '.upload-';
/** This process's start, in its temp files' names: a restarted process may get the pid of the one that crashed. */
const BOOT = randomBytes(6).toString('hex');
const BLOB_NAME = /^[0-9a-f]{64}$/;

/**
 * The embedded file store: metadata in SQLite (file-rows.ts), each distinct content once, as the file
 * `<dataDir>/files/<sha256>`.
 *
 * An upload is written to a temp file in that directory while it is hashed, fsynced, then renamed to its hash
 * (or dropped when that content is there already) and the directory fsynced, before the row that names it is
 * committed: a crash (kill -9, power loss) never leaves a row without its content nor a partial content under a
 * hash. Blobs are immutable; a read opens its blob before returning, so it serves the content it began with even
 * if the file is replaced or removed meanwhile (the open descriptor keeps an unlinked file readable).
 *
 * "Add a row holding blob H" and "delete blob H if no row holds it" run under one lock per blob (shared by every
 * store of this process on the directory), so a removal never deletes a content an upload is about to refer to.
 * One process owns a data directory (as it owns the SQLite file); temp files of dead processes and blobs no row
 * holds (left by a crash between a rename and its commit, or by an account's deletion) are removed by `sweep`,
 * which runs before a store's first operation.
 */
export class DiskFileStore implements FileStore {
  readonly #db: Kysely<Schema>;
  readonly #dir: string;
  #ready: Promise<void> | undefined;

  constructor(db: Kysely<Schema>, dataDir: string) {
    this.#db = db;
    this.#dir = path.join(dataDir, 'files');
  }

  async put(accountId: string, meta: NewFile, content: FileContent, options: UploadOptions): Promise<StoredFile> {
    return (await this.#upload(accountId, meta, content, options.maxBytes, false)).file;
  }

  async replace(accountId: string, meta: NewFile, content: FileContent, options: UploadOptions): Promise<ReplacedFile> {
    return this.#upload(accountId, meta, content, options.maxBytes, true);
  }

  async info(accountId: string, name: string): Promise<StoredFile | undefined> {
    return fileRow(this.#db, accountId, name);
  }

  async list(accountId: string, query: { prefix?: string | undefined; tag?: string | undefined }, page: { offset: number; limit: number }): Promise<Page<StoredFile>> {
    return listFileRows(this.#db, accountId, query, page);
  }

  async read(accountId: string, name: string, range?: ByteRange): Promise<FileRead | undefined> {
    await this.#prepare();
    let missing: string | undefined;
    for (;;) {
      const file = await fileRow(this.#db, accountId, name);
      if (!file) return undefined;
      if (file.sha256 === missing) throw new Error(`The content of file ${JSON.stringify(name)} (blob ${file.sha256}) is missing from ${this.#dir}`);
      const { start, end } = resolveRange(file.size, range);
      let handle: FileHandle;
      try {
        handle = await open(this.#blobPath(file.sha256), 'r');
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
        // Replaced or removed between the look-up and the open: look again (an unchanged row is data loss).
        missing = file.sha256;
        continue;
      }
      if (end < start) {
        await handle.close();
        return { file, start, end, stream: emptyStream() };
      }
      return { file, start, end, stream: handle.createReadStream({ start, end }) };
    }
  }

  async updateMeta(accountId: string, name: string, patch: FileMetaPatch, now: string): Promise<StoredFile | undefined> {
    return updateFileMeta(this.#db, accountId, name, patch, now);
  }

  async remove(accountId: string, name: string): Promise<boolean> {
    await this.#prepare();
    const sha256 = await deleteFileRow(this.#db, accountId, name);
    if (sha256 === undefined) return false;
    await this.#collect(sha256);
    return true;
  }

  async sweep(): Promise<FileSweep> {
    await mkdir(this.#dir, { recursive: true });
    let temps = 0;
    const candidates: string[] = [];
    for (const entry of await readdir(this.#dir)) {
      if (entry.startsWith(TEMP_PREFIX)) {
        if (abandoned(entry)) {
          await rm(path.join(this.#dir, entry), { force: true });
          temps++;
        }
      } else if (BLOB_NAME.test(entry)) {
        candidates.push(entry);
      }
    }
    const held = await heldBlobs(this.#db, candidates);
    let blobs = 0;
    for (const sha256 of candidates) if (!held.has(sha256) && (await this.#collect(sha256))) blobs++;
    return { temps, blobs };
  }

  /** The directory exists and what a crash left is gone, before the first operation of this store. */
  #prepare(): Promise<void> {
    this.#ready ??= this.sweep().then(
      () => undefined,
      (error: unknown) => {
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  async #upload(accountId: string, meta: NewFile, content: FileContent, maxBytes: number, replace: boolean): Promise<ReplacedFile> {
    await this.#prepare();
    const { temp, sha256, size } = await this.#receive(content, maxBytes);
    const { file, previous } = await withLock(this.#lockKey(sha256), async () => {
      const blob = this.#blobPath(sha256);
      let placed = false;
      try {
        if (await exists(blob)) {
          await rm(temp, { force: true });
        } else {
          await rename(temp, blob);
          placed = true;
          await syncDirectory(this.#dir);
        }
        return await this.#db.transaction().execute((trx) => writeFileRow(trx, accountId, meta, { sha256, size }, replace));
      } catch (error) {
        await rm(temp, { force: true });
        if (placed && !(await blobHeld(this.#db, sha256).catch(() => true))) await rm(blob, { force: true });
        throw error;
      }
    });
    if (previous !== undefined && previous !== sha256) await this.#collect(previous);
    return { file, created: previous === undefined };
  }

  /** Streams `content` into a new temp file, hashing it; removes the file on any failure. */
  async #receive(content: FileContent, maxBytes: number): Promise<{ temp: string; sha256: string; size: number }> {
    const temp = path.join(this.#dir, `${TEMP_PREFIX}${process.pid}-${BOOT}-${randomUUID()}`);
    const handle = await open(temp, 'wx', 0o600);
    const hash = createHash('sha256');
    let size = 0;
    let closed = false;
    try {
      for await (const chunk of uploadChunks(content)) {
        size += chunk.length;
        if (size > maxBytes) throw fileTooLarge(maxBytes);
        hash.update(chunk);
        await writeAll(handle, chunk);
      }
      await handle.sync();
      closed = true;
      await handle.close();
      return { temp, sha256: hash.digest('hex'), size };
    } catch (error) {
      if (!closed) await handle.close().catch(() => undefined);
      await rm(temp, { force: true });
      throw error;
    }
  }

  /** Deletes the blob unless a row holds it; true when it was deleted. */
  async #collect(sha256: string): Promise<boolean> {
    return withLock(this.#lockKey(sha256), async () => {
      if (await blobHeld(this.#db, sha256)) return false;
      await rm(this.#blobPath(sha256), { force: true });
      return true;
    });
  }

  #blobPath(sha256: string): string {
    return path.join(this.#dir, sha256);
  }

  #lockKey(sha256: string): string {
    return `${this.#dir}\0${sha256}`;
  }
}

/** Per-blob locks of this process, across every store on the same directory. */
const locks = new Map<string, Promise<void>>();

async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = locks.get(key) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = before.then(() => mine);
  locks.set(key, tail);
  await before;
  try {
    return await work();
  } finally {
    release();
    if (locks.get(key) === tail) locks.delete(key);
  }
}

/** A temp file of another process run that has ended: a crashed upload. */
function abandoned(entry: string): boolean {
  const [pidText, boot] = entry.slice(TEMP_PREFIX.length).split('-');
  if (boot === BOOT) return false;
  const pid = Number(pidText);
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: the process exists under another user; ESRCH: it is gone.
    return errorCode(error) !== 'EPERM';
  }
}

async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length; ) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

/** Makes a rename in `dir` durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}
