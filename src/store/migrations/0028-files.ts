import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../database.js';

/**
 * The per-account file repository (src/domain/files.ts): `files` (metadata, one row per account and name,
 * pointing at a content by SHA-256) and `file_tags` (one row per tag, for filters). Contents live under
 * `<dataDir>/files/` on SQLite; on PostgreSQL in `file_chunks` (256 KiB pieces per blob), so every node of a
 * cluster reads the same files. Names and tags compare byte for byte on both (collation "C" on PostgreSQL,
 * which also lets `LIKE 'prefix%'` use the key).
 */
export function files(dialect: DialectName): Migration {
  const postgres = dialect === 'postgres';
  const json = postgres ? 'jsonb' : 'text';
  const time = postgres ? 'bigint' : 'integer';
  const text = postgres ? sql`text collate "C"` : sql`text`;
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('files')
        // Deleting an account takes its files along; the contents no file holds any more are swept (FileStore.sweep).
        .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('size', time, (c) => c.notNull())
        .addColumn('sha256', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text', (c) => c.notNull())
        .addColumn('version', 'text')
        .addColumn('tags', json, (c) => c.notNull())
        .addColumn('created_by', 'text')
        .addColumn('created_at', time, (c) => c.notNull())
        .addColumn('updated_at', time, (c) => c.notNull())
        .addPrimaryKeyConstraint('files_pk', ['account_id', 'name'])
        .execute();
      // "Does any file still hold this content?" at every removal and replacement.
      await db.schema.createIndex('files_sha256').on('files').column('sha256').execute();

      await db.schema
        .createTable('file_tags')
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('file_name', text, (c) => c.notNull())
        .addColumn('tag', text, (c) => c.notNull())
        .addPrimaryKeyConstraint('file_tags_pk', ['account_id', 'tag', 'file_name'])
        .addForeignKeyConstraint('file_tags_file_fk', ['account_id', 'file_name'], 'files', ['account_id', 'name'], (c) => c.onDelete('cascade'))
        .execute();
      await db.schema.createIndex('file_tags_file').on('file_tags').columns(['account_id', 'file_name']).execute();

      if (postgres) {
        await db.schema
          .createTable('file_chunks')
          .addColumn('blob', 'text', (c) => c.notNull())
          .addColumn('idx', 'integer', (c) => c.notNull())
          .addColumn('data', 'bytea', (c) => c.notNull())
          .addPrimaryKeyConstraint('file_chunks_pk', ['blob', 'idx'])
          .execute();
        // Uncompressed out-of-line storage: firmware hardly compresses, and a range read (a CoAP block of a few
        // hundred bytes) fetches only the slices it needs instead of decompressing the whole piece.
        await sql`alter table file_chunks alter column data set storage external`.execute(db);
      }
    },
  };
}
