import { AppError, type ErrorCode } from '../errors.js';

/**
 * Runs at most `concurrency` tasks at once; later ones wait in order, and once `maxWaiting` wait, more are
 * refused at once with `busyCode` instead of queueing without bound.
 */
export class ConcurrencyGate {
  readonly #concurrency: number;
  readonly #maxWaiting: number;
  readonly #busyCode: ErrorCode;
  readonly #retryAfterSeconds: number;
  readonly #waiting: (() => void)[] = [];
  #running = 0;

  /** `retryAfterSeconds`: what a refusal tells the caller to wait (an HTTP answer's `Retry-After`). */
  constructor(concurrency: number, maxWaiting: number, busyCode: ErrorCode, retryAfterSeconds = 1) {
    this.#concurrency = concurrency;
    this.#maxWaiting = maxWaiting;
    this.#busyCode = busyCode;
    this.#retryAfterSeconds = retryAfterSeconds;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running < this.#concurrency) this.#running++;
    else if (this.#waiting.length >= this.#maxWaiting) throw new AppError(this.#busyCode, undefined, { retryAfterSeconds: this.#retryAfterSeconds });
    // A finished task hands its slot straight to the oldest waiting one.
    else await new Promise<void>((resolve) => this.#waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
