/**
 * Copies the embedded database's write-ahead log back into the database file from a thread of its own.
 * SQLite does this (a checkpoint) at the end of the commit that grows the log past `wal_autocheckpoint`
 * pages, on the event loop: under event load that was a stall of tens of milliseconds every second or so
 * (bench:mqtt p99 latency 60–75 ms, 10–13 ms without it). Here a second connection on a worker thread
 * checkpoints every CHECKPOINT_MS while the service writes on; the autocheckpoint stays as the safety net
 * (it finds the log copied already, or takes over if this thread is gone).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import type { Logger } from 'pino';

/**
 * How often: each pass copies the newest version of every page written since the one before, so frequent
 * passes copy hot pages (the last leaf of each table and index) over and over; at the event pipeline's
 * peak (~14,000 log pages a second) 250 ms keeps the log far below the autocheckpoint.
 */
const CHECKPOINT_MS = 250;
/** Checkpoints per turn at most: each copies what the service wrote during the one before. */
const MAX_ROUNDS = 10;

interface CheckpointerData {
  readonly kind: 'wal-checkpointer';
  readonly file: string;
}

export interface WalCheckpointer {
  /** Settles once the thread has its connection (it takes a moment to start; commits checkpoint until then). */
  readonly ready: Promise<void>;
  /** Stops the thread after the checkpoint under way, before the database closes. */
  stop(): Promise<void>;
}

/** Starts checkpointing `file` (a SQLite database in WAL mode) from a worker thread. */
export function startWalCheckpointer(file: string, logger?: Logger): WalCheckpointer {
  const data: CheckpointerData = { kind: 'wal-checkpointer', file };
  // This module is the thread's code too. From source (tests, `npm run dev`) it is TypeScript: a worker
  // thread gets no loader from `--import tsx` on Node 20, so it registers tsx itself first.
  const worker = import.meta.url.endsWith('.ts')
    ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(import.meta.url)}))`, { eval: true, workerData: data })
    : new Worker(new URL(import.meta.url), { workerData: data });
  let running = true;
  worker.on('error', (error) => logger?.error({ err: error }, 'WAL checkpoint thread failed; commits checkpoint the log themselves'));
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  void exited.then(() => {
    if (running) logger?.warn('WAL checkpoint thread ended; commits checkpoint the log themselves');
  });
  const ready = new Promise<void>((resolve) => {
    worker.once('message', () => {
      // From now on the thread does not keep the process alive on its own (unless it is being stopped).
      if (running) worker.unref();
      resolve();
    });
    void exited.then(() => resolve());
  });
  return {
    ready,
    async stop() {
      running = false;
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}

/** The thread: a PASSIVE checkpoint never waits for the service's connection nor holds up its writes. */
function checkpointLoop({ file }: CheckpointerData): void {
  const db = new SQLite(file);
  const checkpoint = () => {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
      // All copied: the service's next write starts the log over instead of growing it.
      if (!result || result.busy !== 0 || result.checkpointed >= result.log) return;
    }
  };
  const timer = setInterval(checkpoint, CHECKPOINT_MS);
  parentPort?.postMessage('ready');
  parentPort?.on('message', (message) => {
    if (message !== 'stop') return;
    clearInterval(timer);
    db.close();
    parentPort?.close();
  });
}

if (!isMainThread && (workerData as Partial<CheckpointerData> | null)?.kind === 'wal-checkpointer') checkpointLoop(workerData as CheckpointerData);
