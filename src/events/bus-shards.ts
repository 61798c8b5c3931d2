import type { EventQueue, StoredEvent } from './event-store.js';

/** A shard this node has just taken, where its handling resumes, and who held it before (null: nobody). */
export interface TakenShard {
  readonly shard: number;
  readonly handledThrough: number;
  readonly previousOwner: string | null;
}

/** A shard as the cluster sees it (diagnostics). */
export interface ShardState {
  readonly shard: number;
  readonly owner: string | null;
  readonly handledThrough: number;
  /** ms since the epoch, the database's clock; past: the lease is free to take. */
  readonly leaseUntil: number;
}

/**
 * Cluster mode's shared bus state (docs/cluster.md, "Event bus"): nodes alive, one lease and one handled cursor
 * per shard, and the events accepted in an order every node agrees on. Leases expire on the store's clock, not
 * the nodes', so nodes on several machines need not agree on the time.
 */
export interface BusShardStore {
  /** Accepts events as `EventStore.accept` does, one commit at a time across the cluster, so seqs commit in order. */
  readonly queue: Pick<EventQueue, 'accept'>;
  /** This node is alive for `ttlMs` more, and so are its leases; returns the shards it still holds and how many nodes are alive. */
  heartbeat(node: string, ttlMs: number): Promise<{ held: number[]; liveNodes: number }>;
  /** Takes up to `count` shards that nobody holds or whose lease expired, for `ttlMs`. */
  take(node: string, count: number, ttlMs: number): Promise<TakenShard[]>;
  /** Gives up these shards' leases (their cursors are saved already), so another node may take them at once. */
  release(node: string, shards: readonly number[]): Promise<void>;
  /** Gives up every lease of the node and says it is gone. */
  leave(node: string): Promise<void>;
  /** Events of the shards in `after` (shard → handled through), after that cursor and after `afterSeq`, oldest first. */
  pending(after: ReadonlyMap<number, number>, afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** Every event of these shards at or below `seq` is handled: moves their cursors, only where `node` still holds the lease. */
  saveHandledThrough(node: string, shards: readonly number[], seq: number): Promise<void>;
  shards(): Promise<ShardState[]>;
  /** The newest accepted seq (0: none). */
  head(): Promise<number>;
  /** Events of every shard after `afterSeq`, oldest first (the cluster-wide feed of event streams). */
  after(afterSeq: number, limit: number): Promise<StoredEvent[]>;
}

/**
 * Wakes the nodes that handle a shard when another node accepted events of it. A lost notice costs at most the
 * poll interval: handlers also look for new events every second.
 */
export interface BusNotifier {
  /** Tells the other nodes that events of these shards were accepted. */
  notify(shards: readonly number[]): void;
  /** `listener` is called with the shards of another node's accepted events. */
  listen(listener: (shards: number[]) => void): void;
  close(): void;
}
