import { Readable } from 'node:stream';
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import { nameTaken, type FileContent, type FileMetaPatch, type NewFile, type StoredFile } from '../domain/files.js';
import type { Page } from '../domain/pagination.js';
import { fromJson, toJson, type FilesTable, type Schema } from './schema.js';
import { isUniqueViolation, pageOf, startsWith, toIso, toMs } from './sql.js';

/**
 * The metadata half of both file stores (rows of `files` and `file_tags`, migration 0028); the content half
 * is in disk-file-store.ts (embedded) and pg-file-store.ts. Every writer changes the `files` row before its
 * `file_tags` rows, so concurrent writers of one name queue on that row.
 */

type Db = Kysely<Schema> | Transaction<Schema>;

export async function fileRow(db: Db, accountId: string, name: string): Promise<StoredFile | undefined> {
  const row = await db.selectFrom('files').selectAll().where('account_id', '=', accountId).where('name', '=', name).executeTakeFirst();
  return row && toStoredFile(row);
}

export async function listFileRows(db: Db, accountId: string, query: { prefix?: string | undefined; tag?: string | undefined }, page: { offset: number; limit: number }): Promise<Page<StoredFile>> {
  let base = db.selectFrom('files').where('account_id', '=', accountId);
  if (query.prefix) base = base.where(startsWith('name', query.prefix));
  if (query.tag) {
    const tag = query.tag;
    base = base.where('name', 'in', (eb) => eb.selectFrom('file_tags').select('file_name').where('account_id', '=', accountId).where('tag', '=', tag));
  }
  return pageOf(base, (q) => q.selectAll().orderBy('name'), page, toStoredFile);
}

/**
 * Writes the row of a content just stored as `blob`: a new row (`IOTB_FILE_NAME_TAKEN` when the name is used
 * and `replace` is false), or the existing one replaced. Returns the file and the blob it held before.
 */
export async function writeFileRow(
  trx: Transaction<Schema>,
  accountId: string,
  meta: NewFile,
  blob: { sha256: string; size: number },
  replace: boolean,
): Promise<{ file: StoredFile; previous: string | undefined }> {
  const old = await trx.selectFrom('files').select(['sha256', 'created_at', 'created_by']).where('account_id', '=', accountId).where('name', '=', meta.name).executeTakeFirst();
  if (old && !replace) throw nameTaken(meta.name);
  const at = toMs(meta.now);
  const row = {
    account_id: accountId,
    name: meta.name,
    size: blob.size,
    sha256: blob.sha256,
    content_type: meta.contentType,
    version: meta.version,
    tags: toJson(meta.tags),
    created_by: old ? old.created_by : meta.createdBy,
    created_at: old ? Number(old.created_at) : at,
    updated_at: at,
  };
  if (old) {
    const { account_id: _a, name: _n, created_at: _c, created_by: _b, ...changes } = row;
    await trx.updateTable('files').set(changes).where('account_id', '=', accountId).where('name', '=', meta.name).execute();
  } else {
    try {
      await trx.insertInto('files').values(row).execute();
    } catch (error) {
      throw isUniqueViolation(error) ? nameTaken(meta.name) : error;
    }
  }
  await setTags(trx, accountId, meta.name, meta.tags);
  return {
    file: { accountId, name: meta.name, size: blob.size, sha256: blob.sha256, contentType: meta.contentType, version: meta.version, tags: [...meta.tags], createdBy: row.created_by, createdAt: toIso(row.created_at), updatedAt: meta.now },
    previous: old?.sha256,
  };
}

export async function updateFileMeta(db: Kysely<Schema>, accountId: string, name: string, patch: FileMetaPatch, now: string): Promise<StoredFile | undefined> {
  return db.transaction().execute(async (trx) => {
    const changes = {
      updated_at: toMs(now),
      ...(patch.contentType !== undefined ? { content_type: patch.contentType } : {}),
      ...(patch.version !== undefined ? { version: patch.version } : {}),
      ...(patch.tags !== undefined ? { tags: toJson(patch.tags) } : {}),
    };
    const row = await trx.updateTable('files').set(changes).where('account_id', '=', accountId).where('name', '=', name).returningAll().executeTakeFirst();
    if (!row) return undefined;
    if (patch.tags !== undefined) await setTags(trx, accountId, name, patch.tags);
    return toStoredFile(row);
  });
}

/** Deletes the row (its tags go by cascade); returns the blob it held. */
export async function deleteFileRow(db: Db, accountId: string, name: string): Promise<string | undefined> {
  const row = await db.deleteFrom('files').where('account_id', '=', accountId).where('name', '=', name).returning('sha256').executeTakeFirst();
  return row?.sha256;
}

/** Whether any file of any account holds the blob. */
export async function blobHeld(db: Db, sha256: string): Promise<boolean> {
  const row = await db.selectFrom('files').select(sql<number>`1`.as('one')).where('sha256', '=', sha256).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Of `hashes`, those some file holds. */
export async function heldBlobs(db: Db, hashes: readonly string[]): Promise<Set<string>> {
  const held = new Set<string>();
  for (let i = 0; i < hashes.length; i += 500) {
    const rows = await db.selectFrom('files').select('sha256').distinct().where('sha256', 'in', hashes.slice(i, i + 500)).execute();
    for (const row of rows) held.add(row.sha256);
  }
  return held;
}

async function setTags(trx: Transaction<Schema>, accountId: string, name: string, tags: readonly string[]): Promise<void> {
  await trx.deleteFrom('file_tags').where('account_id', '=', accountId).where('file_name', '=', name).execute();
  if (tags.length > 0) await trx.insertInto('file_tags').values(tags.map((tag) => ({ account_id: accountId, file_name: name, tag }))).execute();
}

function toStoredFile(row: Selectable<FilesTable>): StoredFile {
  return {
    accountId: row.account_id,
    name: row.name,
    size: Number(row.size),
    sha256: row.sha256,
    contentType: row.content_type,
    version: row.version,
    tags: fromJson<string[]>(row.tags),
    createdBy: row.created_by,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/**
 * The bytes of an upload as Buffers. A Readable is read without being destroyed when the consumer stops early
 * (too large, a store error): the caller owns it (see FileStore).
 */
export async function* uploadChunks(content: FileContent): AsyncGenerator<Buffer> {
  const source: AsyncIterable<unknown> = content instanceof Readable ? { [Symbol.asyncIterator]: () => content.iterator({ destroyOnReturn: false }) } : content;
  for await (const chunk of source) {
    if (Buffer.isBuffer(chunk)) yield chunk;
    else if (chunk instanceof Uint8Array) yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    else throw new TypeError('A file content is a stream of bytes (Buffer or Uint8Array chunks)');
  }
}

/** A byte stream that ends at once (the whole of an empty file). */
export function emptyStream(): Readable {
  return new Readable({
    read() {
      this.push(null);
    },
  });
}
