import type { Logger } from 'pino';

/** One line per reason in this window at most. */
export const THROTTLED_LOG_MS = 10_000;

/**
 * Log lines about refused devices (bad log-ins, junk datagrams, broken connections), at most one per reason
 * every `intervalMs`, each saying how many were left out since the last: anyone on the network can make
 * such refusals, and a flood of them must not flood the log or the disk under it.
 */
export class ThrottledLog {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(logger: Logger, intervalMs = THROTTLED_LOG_MS) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  /** Logs `message` at info level unless a line for `reason` was written within the window. */
  info(reason: string, detail: Record<string, unknown>, message: string): void {
    this.#write('info', reason, detail, message);
  }

  /** The same at error level: failures a peer can cause again and again (one datagram after another). */
  error(reason: string, detail: Record<string, unknown>, message: string): void {
    this.#write('error', reason, detail, message);
  }

  #write(level: 'info' | 'error', reason: string, detail: Record<string, unknown>, message: string): void {
    const now = Date.now();
    const last = this.#last.get(reason);
    if (last && now - last.at < this.#intervalMs) {
      last.suppressed++;
      return;
    }
    // Reasons are a fixed set per caller; the map only grows when a caller passes free text, so cap it.
    if (this.#last.size >= 1000) this.#last.clear();
    this.#last.set(reason, { at: now, suppressed: 0 });
    this.#logger[level]({ reason, ...detail, refusedSinceLastLine: last?.suppressed ?? 0 }, message);
  }
}
