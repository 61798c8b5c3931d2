import type { ImportCounts } from './importer.js';

/** An import job as stored: what `GET /imex/jobs/{id}` shows, on any node and after a restart. */
export interface ImportJobRecord {
  readonly id: string;
  readonly accountId: string;
  readonly state: 'running' | 'done' | 'failed';
  readonly dryRun: boolean;
  readonly counts: ImportCounts;
  readonly error: string | null;
  readonly startedAt: number;
  readonly finishedAt: number | null;
  /** When the record was last written: a running job writes it every few seconds (its heartbeat). */
  readonly updatedAt: number;
}

/** Where import jobs are kept (src/store/import-job-store.ts on SQLite and PostgreSQL). */
export interface ImportJobStore {
  /** Inserts the job or replaces its state, counts, error and times. */
  save(job: ImportJobRecord): Promise<void>;
  /** The account's job with this id; undefined for an unknown id and for another account's job alike. */
  get(accountId: string, id: string): Promise<ImportJobRecord | undefined>;
  /**
   * Marks failed, with `error`, every job still running whose heartbeat is older than `staleBefore`: the process
   * that ran it stopped. Returns how many.
   */
  failStale(staleBefore: number, error: string, now: number): Promise<number>;
  /** Forgets finished jobs that finished before `before`. */
  deleteFinishedBefore(before: number): Promise<void>;
}
