import type { Logger } from 'pino';
import type { AcceptedListener } from './event-bus.js';
import type { StoredEvent } from './event-store.js';

/** How many events one read takes. */
const READ_LIMIT = 500;

export interface ClusterFeedSource {
  /** Events of every shard after `afterSeq`, oldest first. */
  after(afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** The newest accepted seq. */
  head(): Promise<number>;
}

/**
 * Every event any node of a cluster accepts, in seq order, shortly after its commit: what event streams (SSE) show,
 * whichever node their client is connected to. It reads the events table only while someone listens, when told
 * that some node committed (the bus notices) or at the bus's poll. Seqs commit in order across the cluster (the
 * accept lock), so reading after the last seq seen misses nothing.
 */
export class ClusterFeed {
  readonly #source: ClusterFeedSource;
  readonly #logger: Logger;
  readonly #listeners = new Set<AcceptedListener>();
  /** The last seq delivered; undefined while nobody listens. */
  #through: number | undefined;
  #priming: Promise<void> | undefined;
  #reading = false;
  #readAgain = false;

  constructor(source: ClusterFeedSource, logger: Logger) {
    this.#source = source;
    this.#logger = logger;
  }

  /** Listens from now on; `ready` resolves once events after now will be delivered. */
  watch(listener: AcceptedListener): { ready: Promise<void>; stop: () => void } {
    this.#listeners.add(listener);
    this.#priming ??= this.#source.head().then(
      (head) => void (this.#through ??= head),
      (error: unknown) => {
        this.#priming = undefined;
        throw error;
      },
    );
    return {
      ready: this.#priming,
      stop: () => {
        this.#listeners.delete(listener);
        if (this.#listeners.size > 0) return;
        this.#through = undefined;
        this.#priming = undefined;
      },
    };
  }

  /** Some node committed events (or the poll came round): reads what is new, if anyone listens. */
  poke(): void {
    if (this.#listeners.size === 0 || this.#through === undefined) return;
    if (this.#reading) {
      this.#readAgain = true;
      return;
    }
    this.#reading = true;
    void this.#read().finally(() => {
      this.#reading = false;
      if (this.#readAgain) {
        this.#readAgain = false;
        this.poke();
      }
    });
  }

  async #read(): Promise<void> {
    try {
      for (;;) {
        const through = this.#through;
        if (through === undefined) return;
        const events = await this.#source.after(through, READ_LIMIT);
        // Nobody listens any more, or a new round of listening began meanwhile.
        if (this.#through !== through || events.length === 0) return;
        this.#through = events[events.length - 1]!.seq;
        for (const listener of this.#listeners) {
          try {
            listener(events);
          } catch (error) {
            this.#logger.error({ err: error }, 'cluster event feed listener failed');
          }
        }
        if (events.length < READ_LIMIT) return;
      }
    } catch (error) {
      this.#logger.warn({ err: error }, 'could not read the cluster event feed; trying at the next notice');
    }
  }
}
