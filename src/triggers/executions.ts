import type { Page, PageRequest } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import type { RunStatus } from './sandbox/protocol.js';

/** The record of one trigger run. */
export interface Execution {
  readonly id: string;
  readonly accountId: string;
  readonly triggerId: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly status: RunStatus;
  /** The `trigger.exit` message, the uncaught error, `timeout…`, `memory limit…`, or why the worker died. */
  readonly error: string | null;
  /** Script line of an uncaught error, when known. */
  readonly line: number | null;
  /** What the script logged (`log`, `console.*`), at most 100 lines. */
  readonly logs: string[];
  /** Run through `POST /triggers/{id}/run` rather than by an event on the bus. */
  readonly test: boolean;
  /** What the script added with `trigger.addContext`. */
  readonly context: Record<string, unknown>;
  /** Groups the script put the execution in with `trigger.addGroup`. */
  readonly groups: string[];
}

export interface ExecutionFilter {
  readonly triggerId?: string | undefined;
  readonly status?: RunStatus | undefined;
  readonly eventId?: string | undefined;
}

export interface ExecutionStore {
  /** Records several executions in one transaction. */
  insert(executions: readonly Execution[]): Promise<void>;
  /**
   * Records one execution in the store's own queue of writes, which commit in order with the event bus's
   * (the embedded database's hot path): it then commits no later than the handled cursor that covers its
   * event. Stores without it get the executions of one tick in one `insert`.
   */
  readonly recordOne?: ((execution: Execution) => Promise<void>) | undefined;
  /** Newest first. */
  list(accountId: string, filter: ExecutionFilter, page: PageRequest): Promise<Page<Execution>>;
  /** Retention: deletes the records of runs started before `time` (ms); returns how many. */
  deleteOlderThan(time: number): Promise<number>;
}

export class Executions {
  readonly #store: ExecutionStore;
  #batch: { executions: Execution[]; done: Promise<void> } | undefined;
  /** Writes not yet done: batches, or the last execution given to a store that commits in order. */
  readonly #writing = new Set<Promise<void>>();
  #last: Promise<void> | undefined;
  readonly #observers: Array<(execution: Execution) => void> = [];

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** Told every execution recorded (the operator's metrics); called synchronously, so it must be quick. */
  observe(observer: (execution: Execution) => void): void {
    this.#observers.push(observer);
  }

  /** Records an execution; those recorded in the same tick share one transaction (a commit per run cost more than the run). */
  record(execution: Execution): Promise<void> {
    for (const observer of this.#observers) observer(execution);
    if (this.#store.recordOne) return (this.#last = this.#store.recordOne(execution));
    if (this.#batch) {
      this.#batch.executions.push(execution);
      return this.#batch.done;
    }
    const executions = [execution];
    const done = new Promise<void>((resolve, reject) =>
      setImmediate(() => {
        this.#batch = undefined;
        this.#store.insert(executions).then(resolve, reject);
      }),
    );
    this.#batch = { executions, done };
    this.#writing.add(done);
    const forget = () => this.#writing.delete(done);
    done.then(forget, forget);
    return done;
  }

  /** Waits for executions recorded but not yet written (before storage closes). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.#writing, this.#last]);
  }

  list(scope: Scope, filter: ExecutionFilter, page: PageRequest): Promise<Page<Execution>> {
    return this.#store.list(scope.accountId, filter, page);
  }
}
