import { AppError, type ErrorCode } from '../errors.js';

export interface WorkGateOptions {
  /** Tasks at once. */
  readonly concurrency: number;
  /** The longest a new task may expect to wait before it starts; past it, it is refused with `busyCode`. */
  readonly maxWaitMs: number;
  readonly busyCode: ErrorCode;
  /** What a task is assumed to take before any has been measured (ms). */
  readonly initialTaskMs?: number;
}

/**
 * Runs at most `concurrency` tasks at once; later ones wait in order. The line is as long as the work it holds
 * allows: a task is refused at once when, at the recent time per task, it would wait longer than `maxWaitMs`.
 * So cheap tasks may queue by the thousand after a restart while costly ones are refused early, and
 * whoever is refused learns it at once rather than after a wait that ends in a timeout anyway.
 */
export class WorkGate {
  readonly #concurrency: number;
  readonly #maxWaitMs: number;
  readonly #busyCode: ErrorCode;
  readonly #waiting: (() => void)[] = [];
  #running = 0;
  /** Moving average of the tasks' durations (ms). */
  #taskMs: number;

  constructor(options: WorkGateOptions) {
    this.#concurrency = options.concurrency;
    this.#maxWaitMs = options.maxWaitMs;
    this.#busyCode = options.busyCode;
    this.#taskMs = options.initialTaskMs ?? 5;
  }

  /** How long a task arriving now would wait, at the recent rate (ms). */
  get expectedWaitMs(): number {
    return Math.ceil((this.#waiting.length + 1) / this.#concurrency) * this.#taskMs;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running < this.#concurrency) this.#running++;
    else if (this.expectedWaitMs > this.#maxWaitMs) throw new AppError(this.#busyCode, undefined, { retryAfterSeconds: Math.ceil(this.#maxWaitMs / 1000) });
    // A finished task hands its slot straight to the oldest waiting one.
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    const started = performance.now();
    try {
      return await task();
    } finally {
      this.#taskMs += (performance.now() - started - this.#taskMs) / 16;
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
