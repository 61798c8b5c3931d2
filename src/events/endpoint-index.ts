import type { Logger } from 'pino';
import type { EventStore } from './event-store.js';

/** How often the index catches up with the handled events. */
const INTERVAL_MS = 1000;
/** Events per pass: one transaction short enough not to hold up the event pipeline on SQLite. */
const PASS_EVENTS = 10_000;

/**
 * Keeps the history's by-endpoint index (`event_endpoints`) a second or so behind the handled events,
 * writing it in bulk instead of a page per endpoint with every accepted event. Searches by endpoint read
 * what it has not covered yet from the events themselves.
 */
export class EndpointIndexJob {
  readonly #store: EventStore;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<void> | undefined;
  #stopped = false;

  constructor(store: EventStore, options: { logger: Logger }) {
    this.#store = store;
    this.#logger = options.logger;
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(INTERVAL_MS);
  }

  /** Stops the schedule and waits for a pass under way, so storage can close after it. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#pass;
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#pass = this.#run();
    }, delayMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    let next = INTERVAL_MS;
    try {
      // A full pass means more is waiting (after a restart or a burst): the next one follows at once.
      if ((await this.#store.indexEndpoints(PASS_EVENTS)) === PASS_EVENTS) next = 0;
    } catch (error) {
      this.#logger.error({ err: error }, 'could not index the history by endpoint');
    }
    this.#schedule(next);
  }
}
