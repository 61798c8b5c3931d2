import type { Logger } from 'pino';
import type { BusNotifier, BusShardStore } from './bus-shards.js';
import { ClusterFeed } from './cluster-feed.js';
import { DurableEventBus, type AcceptedListener, type EventBus, type EventBatchConsumer, type EventConsumer } from './event-bus.js';
import type { Event } from './event.js';
import type { EventQueue, StoredEvent } from './event-store.js';
import { BUS_SHARDS, shardOf } from './shards.js';

export interface ClusterEventBusOptions {
  /** This node's name in `bus_nodes` and the leases; unique while it runs. */
  readonly node: string;
  readonly shards: BusShardStore;
  readonly notifier: BusNotifier;
  readonly parallelism: number;
  readonly maxInMemory?: number | undefined;
  readonly beforeCursorSave?: (() => Promise<unknown>) | undefined;
  readonly logger: Logger;
  /** How often the node renews its leases and rebalances, default 2 s. */
  readonly heartbeatMs?: number;
  /** How long a lease lasts without renewal, default 10 s: a dead node's shards are taken after this. */
  readonly leaseMs?: number;
  /** How often handlers look for events nobody told them about, default 1 s. */
  readonly pollMs?: number;
}

/** What a node knows of the cluster's bus (diagnostics and `/ready`). */
export interface ClusterBusState {
  readonly node: string;
  readonly shards: readonly number[];
  readonly liveNodes: number;
  /** Events handled from shards taken from a node whose lease had expired: some may have run there already. */
  readonly resumedEvents: number;
}

/**
 * The event bus of a cluster (docs/cluster.md, "Event bus"). Any node accepts events (one commit at a time across
 * the cluster, so seqs commit in order); each of the 64 shards is handled by the node holding its lease, in order
 * per partition as the embedded bus does. A node takes its fair share of free or expired shards at every
 * heartbeat and gives up what is beyond it, so shards move when nodes join, leave or die.
 *
 * Handling is the embedded bus itself (`DurableEventBus`) over a view of the held shards; a change of shards
 * stops it (in-flight events finish, the cursors are saved) and starts another over the new set.
 */
export class ClusterEventBus implements EventBus {
  readonly #options: ClusterEventBusOptions;
  readonly #heartbeatMs: number;
  readonly #leaseMs: number;
  /** Accepts and tells local listeners; never started, so it dispatches nothing itself. */
  readonly #acceptor: DurableEventBus;
  /** Subscribed consumers, handed to each handler in order. */
  readonly #consumers: ((handler: DurableEventBus) => void)[] = [];
  /** Every node's accepted events, for event streams. */
  readonly #feed: ClusterFeed;
  /** Held shards and the cursor each was taken at. */
  #held = new Map<number, number>();
  #handler: DurableEventBus | undefined;
  #liveNodes = 1;
  #resumedEvents = 0;
  /** Per shard taken from an expired lease: events up to this seq may have run on the node that held it. */
  readonly #resumeThrough = new Map<number, number>();
  #running = false;
  #beating: Promise<void> | undefined;
  #rebalancing: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  readonly #nodeLost: ((node: string) => void)[] = [];

  constructor(options: ClusterEventBusOptions) {
    this.#options = options;
    this.#heartbeatMs = options.heartbeatMs ?? 2000;
    this.#leaseMs = options.leaseMs ?? 10_000;
    this.#acceptor = new DurableEventBus({ ...NO_QUEUE, accept: (events) => options.shards.queue.accept(events) }, { parallelism: 1, logger: options.logger });
    this.#acceptor.watch((stored) => this.#accepted(stored));
    this.#feed = new ClusterFeed(options.shards, options.logger);
    options.notifier.listen((shards) => {
      if (shards.some((shard) => this.#held.has(shard))) this.#handler?.catchUp();
      this.#feed.poke();
    });
  }

  get backlog(): { inMemory: number; inStoreOnly: boolean } {
    return this.#handler?.backlog ?? { inMemory: 0, inStoreOnly: false };
  }

  get state(): ClusterBusState {
    return { node: this.#options.node, shards: [...this.#held.keys()].sort((a, b) => a - b), liveNodes: this.#liveNodes, resumedEvents: this.#resumedEvents };
  }

  publish(events: readonly Event[]): Promise<void> {
    return this.#acceptor.publish(events);
  }

  subscribe(consumer: EventConsumer): void {
    this.#consumers.push((handler) => handler.subscribe(consumer));
  }

  subscribeBatches(consumer: EventBatchConsumer): void {
    this.#consumers.push((handler) => handler.subscribeBatches(consumer));
  }

  watch(listener: AcceptedListener): () => void {
    return this.#acceptor.watch(listener);
  }

  /** `listener` hears of a node whose leases this node took after they expired: it died (a node that stops gives them up). */
  onNodeLost(listener: (node: string) => void): void {
    this.#nodeLost.push(listener);
  }

  watchAll(listener: AcceptedListener): { ready: Promise<void>; stop: () => void } {
    return this.#feed.watch(listener);
  }

  async start(): Promise<void> {
    this.#running = true;
    await this.#beat();
    await this.#rebalancing;
    const every = (ms: number, run: () => void) => this.#timers.push(setInterval(run, ms).unref());
    every(this.#heartbeatMs, () => void this.#beat());
    every(this.#options.pollMs ?? 1000, () => {
      this.#handler?.catchUp();
      this.#feed.poke();
    });
  }

  async stop(): Promise<void> {
    this.#running = false;
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    await this.#beating;
    await this.#rebalancing;
    await this.#handler?.stop();
    this.#handler = undefined;
    this.#held = new Map();
    // Other nodes take the shards at their next heartbeat instead of after the lease expires.
    await this.#options.shards.leave(this.#options.node).catch((error: unknown) => this.#options.logger.warn({ err: error }, 'could not give up bus leases'));
  }

  /** Renews this node's leases (never held up by a rebalance) and starts a rebalance when the shares changed. */
  #beat(): Promise<void> {
    if (this.#beating) return this.#beating;
    this.#beating = (async () => {
      try {
        const { held, liveNodes } = await this.#options.shards.heartbeat(this.#options.node, this.#leaseMs);
        this.#liveNodes = liveNodes;
        if (!this.#running || this.#rebalancing) return;
        const fair = Math.ceil(BUS_SHARDS / Math.max(1, liveNodes));
        const stillHeld = new Set(held);
        const lost = [...this.#held.keys()].filter((shard) => !stillHeld.has(shard));
        if (lost.length > 0 || held.length !== fair) this.#rebalancing = this.#rebalance(lost, fair).finally(() => (this.#rebalancing = undefined));
      } catch (error) {
        this.#options.logger.warn({ err: error }, 'bus heartbeat failed; leases expire unless the next one succeeds');
      } finally {
        this.#beating = undefined;
      }
    })();
    return this.#beating;
  }

  async #rebalance(lost: readonly number[], fair: number): Promise<void> {
    const { shards, node, logger } = this.#options;
    const held = new Map(this.#held);
    for (const shard of lost) held.delete(shard);
    if (lost.length > 0) logger.warn({ shards: lost }, 'bus shards lost to another node (this node missed its heartbeats)');
    let giveUp: number[] = [];
    try {
      if (held.size < fair) {
        const taken = await shards.take(node, fair - held.size, this.#leaseMs);
        for (const { shard, handledThrough } of taken) held.set(shard, handledThrough);
        const fromOthers = taken.filter((shard) => shard.previousOwner !== null && shard.previousOwner !== node);
        if (fromOthers.length > 0) {
          logger.warn({ shards: fromOthers.map((shard) => shard.shard), from: [...new Set(fromOthers.map((shard) => shard.previousOwner))] }, 'bus shards taken over from a node whose lease expired');
          // What the node that held them may have run already: the events up to the head now.
          const head = await shards.head();
          for (const { shard, handledThrough } of fromOthers) if (head > handledThrough) this.#resumeThrough.set(shard, head);
          for (const lost of new Set(fromOthers.map((shard) => shard.previousOwner!))) for (const listener of this.#nodeLost) listener(lost);
        }
      } else if (held.size > fair) {
        giveUp = [...held.keys()].sort((a, b) => b - a).slice(0, held.size - fair);
        for (const shard of giveUp) held.delete(shard);
      }
    } catch (error) {
      logger.warn({ err: error }, 'could not take bus shards; trying at the next heartbeat');
    }
    if (sameKeys(held, this.#held)) return;
    // In-flight events finish and the cursors are saved before the set changes.
    await this.#handler?.stop();
    // Where each shard is now: the saved cursors moved while the old handler ran.
    const cursors = new Map((await shards.shards()).map((state) => [state.shard, state.handledThrough]));
    for (const shard of held.keys()) held.set(shard, Math.max(held.get(shard)!, cursors.get(shard) ?? 0));
    this.#held = held;
    if (giveUp.length > 0) await shards.release(node, giveUp).catch((error: unknown) => logger.warn({ err: error }, 'could not give up bus shards; their leases expire'));
    if (!this.#running) return;
    this.#handler = this.#newHandler(held);
    await this.#handler.start();
    logger.info({ shards: held.size, liveNodes: this.#liveNodes }, 'bus shards handled by this node');
  }

  #newHandler(held: ReadonlyMap<number, number>): DurableEventBus {
    const { shards, node } = this.#options;
    const list = [...held.keys()];
    const queue: EventQueue = {
      ...NO_QUEUE,
      pending: async (afterSeq, limit) => {
        const events = await shards.pending(held, afterSeq, limit);
        this.#countResumed(events);
        return events;
      },
      handledThrough: async () => Math.min(...held.values()),
      saveHandledThrough: (seq) => shards.saveHandledThrough(node, list, seq),
    };
    const handler = new DurableEventBus(queue, {
      parallelism: this.#options.parallelism,
      maxInMemory: this.#options.maxInMemory,
      beforeCursorSave: this.#options.beforeCursorSave,
      logger: this.#options.logger,
    });
    for (const subscribe of this.#consumers) subscribe(handler);
    return handler;
  }

  #countResumed(events: readonly StoredEvent[]): void {
    if (this.#resumeThrough.size === 0) return;
    for (const { seq, event } of events) {
      const shard = shardOf(event);
      const through = this.#resumeThrough.get(shard);
      if (through === undefined) continue;
      if (seq <= through) this.#resumedEvents++;
      else this.#resumeThrough.delete(shard);
    }
  }

  /** After a local commit: this node's handler reads its shards' events, the other nodes are told of theirs. */
  #accepted(stored: readonly StoredEvent[]): void {
    const touched = new Set<number>();
    for (const { event } of stored) touched.add(shardOf(event));
    if ([...touched].some((shard) => this.#held.has(shard))) this.#handler?.catchUp();
    this.#options.notifier.notify([...touched]);
    this.#feed.poke();
  }
}

/** Queue operations a part of the cluster bus never calls. */
const NO_QUEUE: EventQueue = {
  accept: () => Promise.reject(new Error('not an accepting queue')),
  pending: async () => [],
  handledThrough: async () => 0,
  saveHandledThrough: async () => undefined,
};

function sameKeys(a: ReadonlyMap<number, unknown>, b: ReadonlyMap<number, unknown>): boolean {
  return a.size === b.size && [...a.keys()].every((key) => b.has(key));
}
