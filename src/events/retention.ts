import type { Logger } from 'pino';
import type { EventStore } from './event-store.js';

const HOUR = 3_600_000;

/** Deletes history older than the retention period: at start, then hourly. */
export class RetentionJob {
  readonly #store: EventStore;
  readonly #days: number;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<number> | undefined;

  constructor(store: EventStore, options: { days: number; logger: Logger }) {
    this.#store = store;
    this.#days = options.days;
    this.#logger = options.logger;
  }

  start(): void {
    if (this.#days === 0) return;
    this.#pass = this.run();
    this.#timer = setInterval(() => {
      this.#pass = this.run();
    }, HOUR);
    this.#timer.unref();
  }

  /** Stops the schedule and waits for a pass under way, so storage can close after it. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pass;
  }

  /** One pass; returns how many events were deleted. */
  async run(): Promise<number> {
    try {
      const deleted = await this.#store.deleteOlderThan(Date.now() - this.#days * 24 * HOUR);
      if (deleted > 0) this.#logger.info({ deleted, retentionDays: this.#days }, 'history retention');
      return deleted;
    } catch (error) {
      this.#logger.error({ err: error }, 'history retention failed');
      return 0;
    }
  }
}
