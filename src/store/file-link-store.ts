import type { Kysely, Selectable } from 'kysely';
import type { FileLinkRecord, FileLinkStore } from '../domain/file-links.js';
import type { FileLinksTable, Schema } from './schema.js';

/** Download links in `file_links` (migration 0029), on SQLite and PostgreSQL alike. */
export class SqlFileLinkStore implements FileLinkStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insert(link: FileLinkRecord): Promise<void> {
    await this.#db
      .insertInto('file_links')
      .values({
        token_hash: link.tokenHash,
        account_id: link.accountId,
        name: link.name,
        sha256: link.sha256,
        size: link.size,
        expires_at: link.expiresAt,
        created_at: link.createdAt,
        created_by: link.createdBy,
      })
      .execute();
  }

  async find(tokenHash: string): Promise<FileLinkRecord | undefined> {
    const row = await this.#db.selectFrom('file_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return row && toRecord(row);
  }

  async remove(accountId: string, tokenHash: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('file_links').where('token_hash', '=', tokenHash).where('account_id', '=', accountId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async removeFor(accountId: string, name: string): Promise<string[]> {
    const rows = await this.#db.deleteFrom('file_links').where('account_id', '=', accountId).where('name', '=', name).returning('token_hash').execute();
    return rows.map((row) => row.token_hash);
  }

  async removeExpired(now: number): Promise<number> {
    const result = await this.#db.deleteFrom('file_links').where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toRecord(row: Selectable<FileLinksTable>): FileLinkRecord {
  return {
    tokenHash: row.token_hash,
    accountId: row.account_id,
    name: row.name,
    sha256: row.sha256,
    // PostgreSQL's bigint comes back as a number (database.ts), SQLite's integer too; Number() for safety.
    size: Number(row.size),
    expiresAt: Number(row.expires_at),
    createdAt: Number(row.created_at),
    createdBy: row.created_by,
  };
}
