import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError } from '../errors.js';
import { fileTooLarge, nameTaken, resolveRange, type ByteRange, type FileContent, type FileMetaPatch, type FileRead, type FileStore, type FileSweep, type NewFile, type ReplacedFile, type StoredFile, type UploadOptions } from '../domain/files.js';
import type { Page } from '../domain/pagination.js';
import { blobHeld, deleteFileRow, emptyStream, fileRow, listFileRows, updateFileMeta, uploadChunks, writeFileRow } from './file-rows.js';
import type { Schema } from './schema.js';

/**
 * Bytes per `file_chunks` row. Never change it: stored blobs are cut at it, and reads find a byte by it.
 */
export const FILE_CHUNK_BYTES = 256 * 1024;

/**
 * The PostgreSQL file store: metadata in `files`/`file_tags` (file-rows.ts), each distinct content once as
 * `file_chunks` rows (blob = its SHA-256, idx from 0), so every node of a cluster reads the same files.
 *
 * An upload runs in one transaction: its pieces are inserted under a temporary key as they arrive (one
 * 256 KiB buffer, reused), and at the end the content is moved to its hash (or dropped when that content is
 * stored already) and the row written. Nothing of it is visible before the commit, and an error, an upload over
 * its limit, or a node dying mid-upload rolls it all back. The transaction holds a pool connection for the
 * upload's duration: callers should bound concurrent uploads.
 *
 * Transaction-scoped advisory locks order the writers: the name `(account, name)` first, then the blobs
 * involved in hash order. Adding a row that holds blob H and deleting H's pieces when no row holds it both
 * happen under H's lock, so a removal never deletes a content an upload in another node is about to refer to.
 *
 * A read looks up the row, fetches its first piece (the slice of it the range needs), and streams the rest one
 * piece per query: contents are immutable, so a reader gets the old bytes or, once a replacement or removal
 * deleted them, an `IOTB_FILE_NOT_FOUND` error mid-stream; never a mix.
 */
export class PgFileStore implements FileStore {
  readonly #db: Kysely<Schema>;
  #ready: Promise<void> | undefined;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
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
      if (file.sha256 === missing) throw new Error(`The content of file ${JSON.stringify(name)} (blob ${file.sha256}) is missing from file_chunks`);
      const { start, end } = resolveRange(file.size, range);
      if (end < start) return { file, start, end, stream: emptyStream() };
      const first = await this.#slice(file.sha256, start, Math.min(end, pieceEnd(start)));
      if (first === undefined) {
        // Replaced or removed between the look-up and the first piece: look again (an unchanged row is data loss).
        missing = file.sha256;
        continue;
      }
      return { file, start, end, stream: Readable.from(this.#pieces(file, first, start, end), { objectMode: false }) };
    }
  }

  async updateMeta(accountId: string, name: string, patch: FileMetaPatch, now: string): Promise<StoredFile | undefined> {
    return updateFileMeta(this.#db, accountId, name, patch, now);
  }

  async remove(accountId: string, name: string): Promise<boolean> {
    await this.#prepare();
    return this.#db.transaction().execute(async (trx) => {
      await lock(trx, nameKey(accountId, name));
      const sha256 = await deleteFileRow(trx, accountId, name);
      if (sha256 === undefined) return false;
      await lock(trx, blobKey(sha256));
      if (!(await blobHeld(trx, sha256))) await trx.deleteFrom('file_chunks').where('blob', '=', sha256).execute();
      return true;
    });
  }

  /** Deletes the pieces of contents no row holds (left by an account's deletion). Uploads leave nothing to sweep. */
  async sweep(): Promise<FileSweep> {
    const { rows } = await sql<{ blob: string }>`select distinct c.blob from file_chunks c where not exists (select 1 from files f where f.sha256 = c.blob)`.execute(this.#db);
    let blobs = 0;
    for (const { blob } of rows) {
      const deleted = await this.#db.transaction().execute(async (trx) => {
        await lock(trx, blobKey(blob));
        if (await blobHeld(trx, blob)) return false;
        await trx.deleteFrom('file_chunks').where('blob', '=', blob).execute();
        return true;
      });
      if (deleted) blobs++;
    }
    return { temps: 0, blobs };
  }

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
    return this.#db.transaction().execute(async (trx) => {
      const temp = `upload:${randomUUID()}`;
      const { sha256, size } = await receive(trx, temp, content, maxBytes);
      // Writers of one name queue here; the blobs' locks come after, in hash order.
      await lock(trx, nameKey(accountId, meta.name));
      const old = await trx.selectFrom('files').select('sha256').where('account_id', '=', accountId).where('name', '=', meta.name).executeTakeFirst();
      if (old && !replace) throw nameTaken(meta.name);
      for (const blob of [...new Set([sha256, old?.sha256 ?? sha256])].sort()) await lock(trx, blobKey(blob));
      if (await blobHeld(trx, sha256)) {
        await trx.deleteFrom('file_chunks').where('blob', '=', temp).execute();
      } else {
        // Pieces of this content no row held (an account's deletion, not yet swept) make way for the upload's.
        await trx.deleteFrom('file_chunks').where('blob', '=', sha256).execute();
        await trx.updateTable('file_chunks').set({ blob: sha256 }).where('blob', '=', temp).execute();
      }
      const { file, previous } = await writeFileRow(trx, accountId, meta, { sha256, size }, replace);
      if (previous !== undefined && previous !== sha256 && !(await blobHeld(trx, previous))) {
        await trx.deleteFrom('file_chunks').where('blob', '=', previous).execute();
      }
      return { file, created: previous === undefined };
    });
  }

  /** The remaining pieces of a read, one query each; `first` is already fetched. */
  async *#pieces(file: StoredFile, first: Buffer, start: number, end: number): AsyncGenerator<Buffer> {
    yield first;
    for (let position = start + first.length; position <= end; ) {
      const to = Math.min(end, pieceEnd(position));
      const piece = await this.#slice(file.sha256, position, to);
      if (piece === undefined) throw new AppError('IOTB_FILE_NOT_FOUND', 'The file was replaced or removed while it was read', { name: file.name });
      yield piece;
      position = to + 1;
    }
  }

  /** Bytes `from`..`to` (inclusive, within one piece) of a blob; undefined when the blob has no such piece. */
  async #slice(blob: string, from: number, to: number): Promise<Buffer | undefined> {
    const idx = Math.floor(from / FILE_CHUNK_BYTES);
    const offset = from - idx * FILE_CHUNK_BYTES;
    const { rows } = await sql<{ data: Buffer }>`select substring(data from ${offset + 1} for ${to - from + 1}) as data from file_chunks where blob = ${blob} and idx = ${idx}`.execute(this.#db);
    return rows[0]?.data;
  }
}

/** Inserts the upload's pieces under `temp` as they arrive, hashing them. */
async function receive(trx: Transaction<Schema>, temp: string, content: FileContent, maxBytes: number): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  const piece = Buffer.allocUnsafe(FILE_CHUNK_BYTES);
  let fill = 0;
  let idx = 0;
  let size = 0;
  // The query has been sent (its parameters serialised) when it resolves, so the one buffer is reused.
  const flush = async () => {
    await trx.insertInto('file_chunks').values({ blob: temp, idx: idx++, data: fill === FILE_CHUNK_BYTES ? piece : piece.subarray(0, fill) }).execute();
    fill = 0;
  };
  for await (const chunk of uploadChunks(content)) {
    size += chunk.length;
    if (size > maxBytes) throw fileTooLarge(maxBytes);
    hash.update(chunk);
    for (let offset = 0; offset < chunk.length; ) {
      const n = Math.min(FILE_CHUNK_BYTES - fill, chunk.length - offset);
      chunk.copy(piece, fill, offset, offset + n);
      fill += n;
      offset += n;
      if (fill === FILE_CHUNK_BYTES) await flush();
    }
  }
  if (fill > 0) await flush();
  return { sha256: hash.digest('hex'), size };
}

/** The last byte of the piece holding byte `position`. */
function pieceEnd(position: number): number {
  return (Math.floor(position / FILE_CHUNK_BYTES) + 1) * FILE_CHUNK_BYTES - 1;
}

async function lock(trx: Transaction<Schema>, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
}

function nameKey(accountId: string, name: string): string {
  return `iotb-file-name:${JSON.stringify([accountId, name])}`;
}

function blobKey(sha256: string): string {
  return `iotb-file-blob:${sha256}`;
}
