/**
 * Table shapes of the file repository (files, tags, chunks, download links) and of FOTA jobs that send its files.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Json } from './schema-json.js';

/** The file repository's files (migration 0028): metadata per account and name; the content is the blob `sha256`. */
export interface FilesTable {
  account_id: string;
  /** Compared byte for byte (collation "C" on PostgreSQL, binary on SQLite). */
  name: string;
  size: number;
  /** Lower-case hex: the blob (a file under `<dataDir>/files/` embedded, `file_chunks` rows on PostgreSQL). */
  sha256: string;
  content_type: string;
  version: string | null;
  /** JSON array, in the order given; `file_tags` holds one row per tag for filters. */
  tags: Json;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface FileTagsTable {
  account_id: string;
  file_name: string;
  tag: string;
}

/** Blob contents on PostgreSQL only: 256 KiB pieces, `idx` from 0 (an empty blob has none). */
export interface FileChunksTable {
  /** The blob's SHA-256 (hex); a temporary key while its upload's transaction is open. */
  blob: string;
  idx: number;
  data: Buffer;
}

/** Download links (migration 0029): the SHA-256 of each token, and the file content it was made for. */
export interface FileLinksTable {
  /** base64url SHA-256 of the token (as `tokens.secret_hash`). */
  token_hash: string;
  account_id: string;
  name: string;
  /** The content pinned at creation: a link serves exactly these bytes or nothing. */
  sha256: string;
  size: number;
  expires_at: number;
  created_at: number;
  created_by: string | null;
}

export interface FotaJobsTable {
  id: string;
  account_id: string;
  /** JSON: name, sha256, size, version of the file when the job was made. */
  file: string;
  /** JSON: FotaOptions. */
  options: string;
  /** JSON: FotaSelector. */
  selector: string;
  concurrency: number;
  rate_per_minute: number | null;
  /** running, finished, cancelled. */
  state: string;
  created_by: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  /** Cluster mode: the node driving the job; null in one process. */
  node: string | null;
}

export interface FotaDevicesTable {
  job_id: string;
  endpoint_id: string;
  account_id: string;
  /** Order in the job. */
  seq: number;
  step: string;
  outcome: string | null;
  mode: string | null;
  update_result: number | null;
  reason: string | null;
  failed_step: string | null;
  previous_version: string | null;
  version: string | null;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
}
