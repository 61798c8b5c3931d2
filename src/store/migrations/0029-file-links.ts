import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * Download links of repository files (src/domain/file-links.ts): one row per link, keyed by the SHA-256 of
 * its token (the token itself is never stored), pinning the file's content (`sha256`, `size`) at creation.
 * No foreign key to `files`: a link whose file is replaced or removed stays, and answers "stale" (410), not
 * "unknown". Deleting an account takes its links along.
 */
export function fileLinks(dialect: DialectName): Migration {
  // File names compare byte for byte, as in `files` (0028).
  const text = dialect === 'postgres' ? sql`text collate "C"` : sql`text`;
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('file_links')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('created_by', 'text')
        .execute();
      // revokeAllFor(account, name), and the sweep of expired links.
      await db.schema.createIndex('file_links_file').on('file_links').columns(['account_id', 'name']).execute();
      await db.schema.createIndex('file_links_expires').on('file_links').column('expires_at').execute();
    },
  };
}
