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
  /** Records the events in the history in one transaction; returns their seqs, increasing, in order. */
  accept(events: readonly Event[]): Promise<number[]>;
  /** Events after `afterSeq`, oldest first (the ones not yet handled, after `handledThrough()`). */
  pending(afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** Every event at or below this seq has been handled. */
  handledThrough(): Promise<number>;
  /** Moves the handled cursor forward (it never moves back). */
  saveHandledThrough(seq: number): Promise<void>;
  /** History of an account, newest first, before `beforeSeq` when given. */
  search(accountId: string, query: HistoryQuery, limit: number, beforeSeq?: number): Promise<StoredEvent[]>;
  get(accountId: string, id: string): Promise<Event | undefined>;
  /**
   * Adds up to `maxEvents` handled events to the by-endpoint index, oldest first; returns how many seqs
   * it covered (0: it is up to date).
   */
  indexEndpoints(maxEvents: number): Promise<number>;
  /** Retention: deletes history older than `time` (ms) that has been handled; returns how many. */
  deleteOlderThan(time: number): Promise<number>;
}
