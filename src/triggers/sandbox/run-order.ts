/**
 * The order of a worker's runs: runs of one sequence (an endpoint's, see worker-pool.ts `RunSequence`) arrive
 * with the id of the run they follow (`after`) and start only once that one has ended; the others start as they
 * come. Runs that arrive together are grouped in batches of one script for one call into the isolate
 * (worker.ts, `runBatch`), with a run that follows another of the same batch kept behind it.
 */

/** What ordering needs of a run. */
export interface OrderedRun {
  readonly runId: number;
  /** The run of its sequence it follows, if any. */
  readonly after: number | undefined;
  /** Its script as the service defined it: runs of one definition can share a batch. */
  readonly definition: { readonly ref: number; readonly scriptId: string };
}

export class RunOrder<R extends OrderedRun> {
  readonly #start: (run: R) => void;
  /** Runs received and not ended: a run that follows one of them waits for its end. */
  readonly #unfinished = new Set<number>();
  /** Runs waiting for the run they follow to end, by its id. */
  readonly #followers = new Map<number, R[]>();

  /** `start` runs one run on its own; `ended` must be called when it has. */
  constructor(start: (run: R) => void) {
    this.#start = start;
  }

  /** A run has arrived (before it is started or batched). */
  received(runId: number): void {
    this.#unfinished.add(runId);
  }

  /** A run has ended (its result sent): the runs following it start. */
  ended(runId: number): void {
    this.#unfinished.delete(runId);
    const next = this.#followers.get(runId);
    if (next) {
      this.#followers.delete(runId);
      this.startInOrder(next);
    }
  }

  /** Runs on their own, in their order: one that follows a run not ended waits for it. */
  startInOrder(runs: readonly R[]): void {
    for (const run of runs) {
      if (run.after !== undefined && this.#unfinished.has(run.after)) {
        const waiting = this.#followers.get(run.after);
        if (waiting) waiting.push(run);
        else this.#followers.set(run.after, [run]);
      } else {
        this.#start(run);
      }
    }
  }

  /**
   * Runs received together in batches of one script, in the order received, as many as `size` allows for the
   * script. A run that follows another of its script here joins that one's batch, which runs them in order (up to
   * twice the size); one that follows a run elsewhere, not ended, makes a batch of its own, to be started with
   * `startInOrder` (it then waits).
   */
  batches(runs: readonly R[], size: (scriptId: string) => number): R[][] {
    const made: R[][] = [];
    /** The batch being filled per script, and where each run went. */
    const open = new Map<number, R[]>();
    const batchOf = new Map<number, R[]>();
    for (const run of runs) {
      const ref = run.definition.ref;
      const most = size(run.definition.scriptId);
      const before = run.after === undefined ? undefined : batchOf.get(run.after);
      let batch: R[] | undefined;
      if (before) {
        if (before[0]!.definition.ref === ref && before.length < most * 2) batch = before;
      } else if (run.after === undefined || !this.#unfinished.has(run.after)) {
        batch = open.get(ref);
        if (!batch || batch.length >= most) open.set(ref, (batch = []));
      }
      if (!batch) made.push((batch = []));
      else if (batch.length === 0 && batch !== before) made.push(batch);
      batch.push(run);
      batchOf.set(run.runId, batch);
    }
    return made;
  }
}
