import type { Logger } from 'pino';
import { partitionOf, type Event } from './event.js';
import type { EventQueue, StoredEvent } from './event-store.js';
import { HandledCursor } from './handled-cursor.js';

/** Something that reacts to events: alerts, metrics, tests. It may be slow; what it throws is logged. */
export type EventConsumer = (event: Event) => Promise<unknown>;

/**
 * Reacts to several events of one partition at once, oldest first (the trigger engine): what was waiting when
 * the partition's turn came, as many as handling takes about {@link TURN_MS} by recent handling times (at most
 * {@link MAX_EVENTS_AT_ONCE}, one until it is known). It handles them in their order; what it throws is logged.
 */
export type EventBatchConsumer = (events: readonly Event[]) => Promise<unknown>;

/** Most waiting events of one partition a turn hands over at once. */
export const MAX_EVENTS_AT_ONCE = 32;
/**
 * About how long the events of one turn take to handle, by recent turns: a stop (or a cluster's hand-over of
 * shards) waits for the turns under way, so slow events go one at a time.
 */
export const TURN_MS = 50;

/**
 * Sees events as soon as they are accepted (durable), in seq order, before any consumer handles them: live
 * streams (`GET /events/stream`). Called synchronously: it must be quick, and whatever it throws is logged.
 */
export type AcceptedListener = (events: readonly StoredEvent[]) => void;

/**
 * The one path of events. `publish` resolves once the event is accepted (durable); consumers then see
 * events of one partition (endpoint) in order, and different partitions in parallel.
 */
export interface EventBus {
  publish(events: readonly Event[]): Promise<void>;
  subscribe(consumer: EventConsumer): void;
  /** As `subscribe`, for a consumer that takes a partition's waiting events at once. Consumers run in the order subscribed. */
  subscribeBatches(consumer: EventBatchConsumer): void;
  /**
   * Listens to accepted events of this process, whether the bus is running or not; returns what stops it.
   * Unlike a consumer, a listener is not waited for, and sees events only once (not again after a restart).
   */
  watch(listener: AcceptedListener): () => void;
  /**
   * Cluster mode: listens to the events every node accepts, in seq order; `ready` resolves once events from now on
   * will be delivered. Absent in one process, where `watch` sees every event.
   */
  watchAll?(listener: AcceptedListener): { ready: Promise<void>; stop: () => void };
  start(): Promise<void>;
  /** Stops dispatching and waits for events being handled; what is still queued is handled after the next start. */
  stop(): Promise<void>;
}

export interface DurableEventBusOptions {
  /** How many partitions are handled at once (`core.trigger.event.parallelism`), default 50. */
  readonly parallelism: number;
  /**
   * How many accepted events may wait in memory for their turn (`IOTBRIDGE_EVENT_BACKLOG_IN_MEMORY`, default
   * 10,000). Past it, newer ones wait in the store only and are read back in order as the backlog shrinks:
   * a burst or a slow trigger costs disk, not the process's memory.
   */
  readonly maxInMemory?: number | undefined;
  /**
   * Waits until what consumers wrote for the events handled so far is durable (execution records), so the
   * handled cursor never commits ahead of it: after a crash those events would not be handled again, and
   * their records would be lost. Not needed where those writes commit in order with the cursor (the
   * embedded hot path).
   */
  readonly beforeCursorSave?: (() => Promise<unknown>) | undefined;
  readonly logger: Logger;
}

export const DEFAULT_BACKLOG_IN_MEMORY = 10_000;

/**
 * The embedded bus: events are persisted (history + queue) in the service's database before `publish`
 * resolves, then dispatched in-process. Publishes within one tick share one transaction. After a crash or
 * stop, queued events are loaded and dispatched at the next start: nothing accepted is dropped. At most
 * `maxInMemory` accepted events wait in memory; the rest wait in the store and are read back in seq order.
 * One process consumes the queue; the nodes of a cluster share it through `ClusterEventBus` (cluster-bus.ts).
 */
export class DurableEventBus implements EventBus {
  readonly #store: EventQueue;
  readonly #options: DurableEventBusOptions;
  readonly #consumers: EventBatchConsumer[] = [];
  readonly #listeners = new Set<AcceptedListener>();
  /** Events waiting per partition, oldest first. */
  readonly #waiting = new Map<string, StoredEvent[]>();
  /** Partitions with waiting events and nobody handling them, in arrival order. */
  readonly #ready: string[] = [];
  readonly #active = new Map<string, Promise<void>>();
  #batch: { events: Event[]; settle: { resolve: () => void; reject: (error: unknown) => void }[] } | undefined;
  /** Commits run one after another, so sequence numbers reach dispatch in increasing order. */
  #committing: Promise<void> = Promise.resolve();
  readonly #cursor: HandledCursor;
  /** A moving average of the time handling took per event (ms): it sizes the turns. Unknown until one is handled. */
  #msPerEvent: number | undefined;
  #lastSeq = 0;
  #running = false;
  /** While stopping: events up to this seq still run (they fill the gaps below the last one handled). */
  #finishThrough: number | undefined;
  readonly #maxInMemory: number;
  /** Events waiting in memory (in `#waiting`). */
  #inMemory = 0;
  /** Events after `#lastSeq` wait in the store only, until a read catches up with them. */
  #spilled = false;
  #reading = false;
  /** A catch-up was asked for while a read ran: read again after it. */
  #readAgain = false;
  /** While queued events are loaded at start, live commits wait here instead of racing the load. */
  #deferred: StoredEvent[][] | undefined;

  constructor(store: EventQueue, options: DurableEventBusOptions) {
    this.#store = store;
    this.#options = options;
    this.#maxInMemory = Math.max(1, options.maxInMemory ?? DEFAULT_BACKLOG_IN_MEMORY);
    this.#cursor = new HandledCursor({ save: (through) => store.saveHandledThrough(through), beforeSave: options.beforeCursorSave, logger: options.logger });
  }

  /** What waits for its turn: in memory, and whether newer events wait in the store only (diagnostics, tests). */
  get backlog(): { inMemory: number; inStoreOnly: boolean } {
    return { inMemory: this.#inMemory, inStoreOnly: this.#spilled };
  }

  subscribe(consumer: EventConsumer): void {
    this.#consumers.push(oneByOne(consumer, this.#options.logger));
  }

  subscribeBatches(consumer: EventBatchConsumer): void {
    this.#consumers.push(consumer);
  }

  watch(listener: AcceptedListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  async start(): Promise<void> {
    this.#running = true;
    this.#deferred = [];
    // Everything accepted before the last stop (or crash) and not yet handled, as much as memory may hold.
    this.#lastSeq = await this.#store.handledThrough();
    this.#cursor.reset(this.#lastSeq);
    const pending = await this.#store.pending(this.#lastSeq, this.#maxInMemory);
    if (pending.length > 0) this.#options.logger.info({ from: pending[0]?.seq }, 'resuming queued events');
    // Known before the first of them is handled, so that handling them reads back the rest.
    this.#spilled = pending.length >= this.#maxInMemory;
    this.#dispatch(pending);
    const deferred = this.#deferred;
    this.#deferred = undefined;
    // Live commits during the load: dispatched after it, unless the rest waits in the store (they are there too).
    if (!this.#spilled) for (const stored of deferred) this.#dispatch(stored);
  }

  /**
   * Reads what others committed to the queue since the last read (cluster mode: another node accepted events of a
   * shard this one handles). Reads overlapping a call run once more after the current one.
   */
  catchUp(): void {
    if (!this.#running) return;
    this.#spilled = true;
    if (this.#reading) this.#readAgain = true;
    else this.#readBack();
  }

  async stop(): Promise<void> {
    this.#running = false;
    while (this.#active.size > 0) await Promise.all(this.#active.values());
    await this.#finishGaps();
    await this.#committing;
    await this.#cursor.flush();
    // Whatever was waiting is after the cursor in the store and is loaded again by the next start.
    this.#waiting.clear();
    this.#ready.length = 0;
    this.#inMemory = 0;
    this.#spilled = false;
  }

  publish(events: readonly Event[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (!this.#batch) {
        this.#batch = { events: [], settle: [] };
        setImmediate(() => {
          this.#committing = this.#committing.then(() => this.#commit());
        });
      }
      this.#batch.events.push(...events);
      this.#batch.settle.push({ resolve, reject });
    });
  }

  /** Group commit: one transaction for everything published in the same tick. */
  async #commit(): Promise<void> {
    const batch = this.#batch;
    this.#batch = undefined;
    if (!batch) return;
    try {
      const seqs = await this.#store.accept(batch.events);
      for (const { resolve } of batch.settle) resolve();
      const stored = batch.events.map((event, i) => ({ seq: seqs[i]!, event }));
      // A database may number the rows of one insert out of order; dispatch follows the numbers, as a restart would.
      stored.sort((a, b) => a.seq - b.seq);
      for (const listener of this.#listeners) {
        try {
          listener(stored);
        } catch (error) {
          this.#options.logger.error({ err: error }, 'accepted-events listener failed');
        }
      }
      if (this.#deferred) this.#deferred.push(stored);
      else if (this.#running && !this.#spilled) {
        const room = this.#maxInMemory - this.#inMemory;
        if (stored.length <= room) this.#dispatch(stored);
        else {
          // What fits; from there on, newer events wait in the store and `#readBack` catches up with them in
          // order. Memory then holds at least one event, whose handling starts the read.
          this.#dispatch(stored.slice(0, room));
          this.#spilled = true;
          this.#options.logger.warn({ inMemory: this.#inMemory, limit: this.#maxInMemory }, 'event backlog is full in memory: newer events wait in the store');
        }
      }
    } catch (error) {
      for (const { reject } of batch.settle) reject(error);
    }
  }

  #dispatch(events: readonly StoredEvent[]): void {
    for (const stored of events) {
      if (stored.seq <= this.#lastSeq) continue; // already dispatched (a resume racing a live commit)
      this.#lastSeq = stored.seq;
      this.#inMemory++;
      this.#cursor.dispatched(stored.seq);
      const partition = partitionOf(stored.event);
      const waiting = this.#waiting.get(partition);
      if (waiting) {
        waiting.push(stored);
      } else {
        this.#waiting.set(partition, [stored]);
        if (!this.#active.has(partition)) this.#ready.push(partition);
      }
    }
    this.#pump();
  }

  /**
   * Partitions run in parallel, so at a stop some events after the cursor are handled already while earlier ones of
   * a busier partition still wait. Those earlier ones run now, so the saved cursor passes every handled event and
   * the next start (or, in a cluster, the node that takes the shards) runs none of them again. Events after the
   * last one handled stay for the next start.
   */
  async #finishGaps(): Promise<void> {
    const through = this.#cursor.highest;
    if (through <= this.#cursor.through) return;
    this.#finishThrough = through;
    try {
      this.#ready.length = 0;
      for (const [partition, waiting] of this.#waiting) if (waiting[0]!.seq <= through) this.#ready.push(partition);
      this.#pump();
      while (this.#active.size > 0) await Promise.all(this.#active.values());
    } finally {
      this.#finishThrough = undefined;
    }
  }

  /** Whether the event may start now: always while running; while stopping, only to fill a gap. */
  #mayRun(seq: number): boolean {
    return this.#running || (this.#finishThrough !== undefined && seq <= this.#finishThrough);
  }

  #pump(): void {
    while ((this.#running || this.#finishThrough !== undefined) && this.#active.size < this.#options.parallelism && this.#ready.length > 0) {
      const partition = this.#ready.shift()!;
      if (!this.#mayRun(this.#waiting.get(partition)?.[0]?.seq ?? Infinity)) continue;
      const work = this.#drain(partition).finally(() => {
        this.#active.delete(partition);
        // More may have arrived while the last one was handled.
        if (this.#waiting.has(partition) && this.#running) this.#ready.push(partition);
        this.#pump();
      });
      this.#active.set(partition, work);
    }
  }

  /** Hands the partition's waiting events to the consumers, a turn's worth at a time, until none waits. */
  async #drain(partition: string): Promise<void> {
    for (;;) {
      const waiting = this.#waiting.get(partition);
      if (!waiting) return;
      const most = this.#turnSize();
      let count = 0;
      while (count < waiting.length && count < most && this.#mayRun(waiting[count]!.seq)) count++;
      if (count === 0) return;
      const taken = count === waiting.length ? waiting : waiting.splice(0, count);
      if (taken === waiting) this.#waiting.delete(partition);
      this.#inMemory -= count;
      this.#readBackWhenHalfEmpty();
      const events = taken.map((stored) => stored.event);
      const started = performance.now();
      for (const consumer of this.#consumers) {
        try {
          await consumer(events);
        } catch (error) {
          this.#options.logger.error({ err: error, eventIds: events.map((event) => event.id) }, 'event consumer failed');
        }
      }
      const msPerEvent = (performance.now() - started) / count;
      this.#msPerEvent = this.#msPerEvent === undefined ? msPerEvent : this.#msPerEvent * 0.9 + msPerEvent * 0.1;
      for (const stored of taken) this.#cursor.handled(stored.seq);
    }
  }

  /** How many waiting events a turn takes: as many as take about TURN_MS by the recent average, one until it is known. */
  #turnSize(): number {
    if (this.#msPerEvent === undefined) return 1;
    return Math.max(1, Math.min(MAX_EVENTS_AT_ONCE, Math.floor(TURN_MS / this.#msPerEvent)));
  }

  /** Reads back events that wait in the store only once memory is half empty (and no read is under way). */
  #readBackWhenHalfEmpty(): void {
    if (this.#spilled && !this.#reading && this.#inMemory <= this.#maxInMemory / 2) this.#readBack();
  }

  /**
   * Reads the events that wait in the store only, oldest first, as many as memory may hold. It runs in the
   * chain of commits, so no commit decides between memory and store while it reads: when it reads less
   * than it asked for it has caught up, and the next commit dispatches as usual.
   */
  #readBack(): void {
    this.#reading = true;
    this.#committing = this.#committing.then(async () => {
      try {
        if (!this.#running) return;
        const room = this.#maxInMemory - this.#inMemory;
        const stored = await this.#store.pending(this.#lastSeq, room);
        if (stored.length < room) this.#spilled = false;
        this.#dispatch(stored);
      } catch (error) {
        this.#options.logger.error({ err: error }, 'could not read back waiting events; trying again');
        setTimeout(() => {
          if (this.#running && this.#spilled && !this.#reading) this.#readBack();
        }, 1000).unref();
      } finally {
        this.#reading = false;
        if (this.#readAgain) {
          this.#readAgain = false;
          this.catchUp();
        } else if (this.#running) {
          // A turn may have taken what was read while it read (turns take several events): nothing else starts the next read.
          this.#readBackWhenHalfEmpty();
        }
      }
    });
  }
}

/** A consumer of one event at a time, given a partition's events one after another. */
function oneByOne(consumer: EventConsumer, logger: Logger): EventBatchConsumer {
  return async (events) => {
    for (const event of events) {
      try {
        await consumer(event);
      } catch (error) {
        logger.error({ err: error, eventId: event.id }, 'event consumer failed');
      }
    }
  };
}
