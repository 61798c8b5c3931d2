/**
 * Writes the trigger execution records of the embedded database from a thread of its own. The records live in a
 * database file of their own (`iotbridge-executions.sqlite`, migration 0047), attached to the service's connection
 * as `executions_db`: the service reads them there (queries name `executions` alone, which SQLite finds in the
 * attached file), and this thread is the only writer under load. An execution record is written for every trigger
 * run, and on the event loop the insert was the service's largest single cost after the event's own (15 % of its
 * samples in bench:events); here it runs beside it. A file of its own, because SQLite locks a whole file for a
 * write: a second writer to the main file would make the event loop wait on that lock (its busy handler sleeps).
 */
import { isMainThread, parentPort, workerData, type Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import type { Logger } from 'pino';
import { startModuleThread } from './store-thread.js';

/** The records' file in the data directory, and its schema name on the service's connection. */
export const EXECUTIONS_FILE = 'iotbridge-executions.sqlite';
export const EXECUTIONS_SCHEMA = 'executions_db';

/** One record as its row's values, in the order of INSERT_SQL. */
export type ExecutionRow = readonly [
  id: string,
  accountId: string,
  triggerId: string,
  eventId: string,
  eventType: string,
  startedAt: number,
  durationMs: number,
  status: string,
  error: string | null,
  line: number | null,
  logs: string,
  test: number,
  context: string,
  groups: string,
];

const INSERT_SQL =
  'insert into executions (id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups)' +
  ' values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)';

interface WriterData {
  readonly kind: 'execution-writer';
  readonly file: string;
}
type ToThread = { readonly batch: number; readonly rows: readonly ExecutionRow[] } | 'stop';
interface Written {
  readonly batch: number;
  /** Set when some rows could not be written (the others were). */
  readonly error?: string | undefined;
}

/**
 * The service's side: batches go to the thread in order and are committed in that order, each in one transaction;
 * `write` resolves once its batch is committed. The thread starts with the first batch and again after a failure.
 */
export class ExecutionWriter {
  readonly #file: string;
  readonly #logger: Logger | undefined;
  #thread: { readonly worker: Worker; readonly exited: Promise<void> } | undefined;
  #nextBatch = 1;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  #last: Promise<void> = Promise.resolve();
  #stopping = false;

  constructor(file: string, logger?: Logger) {
    this.#file = file;
    this.#logger = logger;
  }

  /** Commits the rows in one transaction after every batch written before; rejects when any of them was not written. */
  write(rows: readonly ExecutionRow[]): Promise<void> {
    if (this.#stopping) return Promise.reject(new Error('the execution writer is stopping'));
    const batch = this.#nextBatch++;
    const written = new Promise<void>((resolve, reject) => this.#waiting.set(batch, { resolve, reject }));
    const { worker } = (this.#thread ??= this.#start());
    // Alive while a batch waits for its commit (a stop must not end the process before it).
    if (this.#waiting.size === 1) worker.ref();
    worker.postMessage({ batch, rows } satisfies ToThread);
    this.#last = written.catch(() => undefined);
    return written;
  }

  /** Settles once every batch written so far has been committed (or failed). */
  flushed(): Promise<void> {
    return this.#last;
  }

  /** Stops the thread after the batches under way (the database closes after this). */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#last;
    const thread = this.#thread;
    if (!thread) return;
    thread.worker.ref();
    thread.worker.postMessage('stop' satisfies ToThread);
    await thread.exited;
  }

  #start(): { worker: Worker; exited: Promise<void> } {
    const worker = startModuleThread(import.meta.url, { kind: 'execution-writer', file: this.#file } satisfies WriterData);
    worker.on('message', (message: Written) => {
      const waiting = this.#waiting.get(message.batch);
      this.#waiting.delete(message.batch);
      if (this.#waiting.size === 0) worker.unref();
      if (message.error === undefined) waiting?.resolve();
      else waiting?.reject(new Error(message.error));
    });
    worker.on('error', (error) => this.#logger?.error({ err: error }, 'execution writer thread failed'));
    const exited = new Promise<void>((resolve) =>
      worker.once('exit', () => {
        // Batches it had not answered are lost with it; the next write starts a new thread.
        for (const waiting of this.#waiting.values()) waiting.reject(new Error('the execution writer thread ended'));
        this.#waiting.clear();
        if (this.#thread?.worker === worker) this.#thread = undefined;
        resolve();
      }),
    );
    return { worker, exited };
  }
}

/** The thread: one connection to the records' file, a prepared insert, a transaction per batch. */
function writeLoop({ file }: WriterData): void {
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // The service's connection reads this file and, rarely, deletes from it (retention, account deletion).
  db.pragma('busy_timeout = 5000');
  let insert: SQLite.Statement | undefined;
  const insertAll = (rows: readonly ExecutionRow[]) => {
    insert ??= db.prepare(INSERT_SQL);
    for (const row of rows) insert.run(...row);
  };
  parentPort?.on('message', (message: ToThread) => {
    if (message === 'stop') {
      db.close();
      parentPort?.close();
      return;
    }
    try {
      db.transaction(insertAll)(message.rows);
      parentPort?.postMessage({ batch: message.batch } satisfies Written);
    } catch {
      // One bad row must not lose the others: each on its own.
      let failed = 0;
      let reason = '';
      for (const row of message.rows) {
        try {
          db.transaction(insertAll)([row]);
        } catch (error) {
          failed++;
          reason = error instanceof Error ? error.message : String(error);
        }
      }
      parentPort?.postMessage({ batch: message.batch, ...(failed > 0 ? { error: `${failed} of ${message.rows.length} execution records not written: ${reason}` } : {}) } satisfies Written);
    }
  });
}

if (!isMainThread && (workerData as Partial<WriterData> | null)?.kind === 'execution-writer') writeLoop(workerData as WriterData);
