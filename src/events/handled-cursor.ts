import type { Logger } from 'pino';

export interface HandledCursorOptions {
  /** Stores how far events are handled (the queue's cursor). */
  readonly save: (through: number) => Promise<void>;
  /** Waits until what consumers wrote for the events handled so far is durable (DurableEventBusOptions.beforeCursorSave). */
  readonly beforeSave?: (() => Promise<unknown>) | undefined;
  readonly logger: Logger;
}

/**
 * How far a bus's events are handled, and its saving. Partitions are handled in parallel, so events finish out of
 * seq order: the cursor is the low-water mark, the highest seq with every event at or below it handled. It is
 * saved once per tick when it moved, one save after another (a save that waits for the database must not be
 * joined by one per tick, or they queue on the same row's lock).
 */
export class HandledCursor {
  readonly #options: HandledCursorOptions;
  /** Dispatched seqs in increasing order from `#outstandingHead`; with `#handled`, the low-water mark. */
  #outstanding: number[] = [];
  #outstandingHead = 0;
  readonly #handled = new Set<number>();
  /** Every event at or below this seq is handled. */
  #through = 0;
  #savedThrough = 0;
  #saveScheduled = false;
  #saving: Promise<void> = Promise.resolve();
  /** The highest seq handled: what a stop fills the gaps up to. */
  #highest = 0;

  constructor(options: HandledCursorOptions) {
    this.#options = options;
  }

  /** Every event at or below this seq is handled. */
  get through(): number {
    return this.#through;
  }

  /** The highest seq handled, gaps below it or not. */
  get highest(): number {
    return this.#highest;
  }

  /** Starts again from the stored cursor, nothing outstanding. */
  reset(through: number): void {
    this.#through = this.#savedThrough = this.#highest = through;
    this.#outstanding = [];
    this.#outstandingHead = 0;
    this.#handled.clear();
  }

  /** An event handed to the consumers: the cursor waits for it. Seqs come in increasing order. */
  dispatched(seq: number): void {
    this.#outstanding.push(seq);
  }

  /** A handled event moves the cursor as far as every earlier one is handled too. */
  handled(seq: number): void {
    if (seq > this.#highest) this.#highest = seq;
    this.#handled.add(seq);
    while (this.#outstandingHead < this.#outstanding.length && this.#handled.has(this.#outstanding[this.#outstandingHead]!)) {
      const done = this.#outstanding[this.#outstandingHead++]!;
      this.#handled.delete(done);
      this.#through = done;
    }
    if (this.#outstandingHead > 4096 && this.#outstandingHead * 2 > this.#outstanding.length) {
      this.#outstanding = this.#outstanding.slice(this.#outstandingHead);
      this.#outstandingHead = 0;
    }
    if (this.#saveScheduled || this.#through === this.#savedThrough) return;
    this.#saveScheduled = true;
    this.#saving = this.#saving.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => this.#save());
  }

  /** Waits for the save under way, then saves where the cursor is now. */
  async flush(): Promise<void> {
    await this.#saving;
    await this.#save();
  }

  async #save(): Promise<void> {
    this.#saveScheduled = false;
    const through = this.#through;
    if (through <= this.#savedThrough) return;
    try {
      await this.#options.beforeSave?.();
      await this.#options.save(through);
      this.#savedThrough = Math.max(this.#savedThrough, through);
    } catch (error) {
      // Events after the saved cursor are handled again after a restart: at-least-once.
      this.#options.logger.error({ err: error, through }, 'could not save how far events are handled');
    }
  }
}
