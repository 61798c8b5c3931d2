import type { Event } from './event.js';

/** An event with its position: a number that grows with every accepted event. */
export interface StoredEvent {
  readonly seq: number;
  readonly event: Event;
}

/** Which events a history search returns; every condition must hold. */
export interface HistoryQuery {
  readonly types?: readonly string[] | undefined;
  readonly endpointId?: string | undefined;
  readonly serviceId?: string | undefined;
  /** ISO times, inclusive. */
  readonly from?: string | undefined;
  readonly to?: string | undefined;
}

export interface EventStore {
  /** Records the events in the history and in the processing queue in one transaction; returns their seqs in order. */
  accept(events: readonly Event[]): Promise<number[]>;
  /** Queued (accepted, not yet processed) events after `afterSeq`, oldest first. */
  pending(afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** Marks events processed: they leave the queue (they stay in the history). */
  ack(seqs: readonly number[]): Promise<void>;
  /** History of an account, newest first, before `beforeSeq` when given. */
  search(accountId: string, query: HistoryQuery, limit: number, beforeSeq?: number): Promise<StoredEvent[]>;
  get(accountId: string, id: string): Promise<Event | undefined>;
  /** Retention: deletes history older than `time` (ms) that is no longer queued; returns how many. */
  deleteOlderThan(time: number): Promise<number>;
}
