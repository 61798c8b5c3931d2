import { CoapError } from './coap-error.js';

/**
 * How one call to a peer ended before its answer (its timeout, its caller's abort), told to what waits on it: the
 * exchange and its queue for a slot. An AbortController a request, with an event listener added and removed by
 * each, cost ~6 % of the main thread under LwM2M reads (docs/performance.md, session 33); a call has one or two
 * listeners at a time, so a list does.
 */
export class CallEnd {
  #reason: CoapError | undefined;
  #listeners: (() => void)[] = [];

  /** Why the call ended; undefined while it runs. */
  get reason(): CoapError | undefined {
    return this.#reason;
  }

  /** Ends the call (the first reason stays) and tells every listener once. */
  end(reason: CoapError): void {
    if (this.#reason) return;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }

  /** Calls `listener` when the call ends (not when it has already: check `reason` first). */
  on(listener: () => void): void {
    if (!this.#reason) this.#listeners.push(listener);
  }

  off(listener: () => void): void {
    const at = this.#listeners.indexOf(listener);
    if (at >= 0) this.#listeners.splice(at, 1);
  }
}

/** The error a call that ended failed with. */
export function endedWith(end: CallEnd): CoapError {
  return end.reason ?? new CoapError('ABORTED', 'aborted');
}
