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

/** Which events a live stream follows (`GET /events/stream`); every condition must hold. */
export interface StreamQuery {
  /** Any of these types. */
  readonly types?: readonly string[] | undefined;
  /** Any of these endpoints. */
  readonly endpointIds?: readonly string[] | undefined;
}

/** The queue a bus works through: accepted events and how far they are handled. */
export interface EventQueue {
  /** Records the events in the history in one transaction; returns their seqs, increasing, in order. */
  accept(events: readonly Event[]): Promise<number[]>;
  /** Events after `afterSeq`, oldest first (the ones not yet handled, after `handledThrough()`). */
  pending(afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** Every event at or below this seq has been handled. */
  handledThrough(): Promise<number>;
  /** Moves the handled cursor forward (it never moves back). */
  saveHandledThrough(seq: number): Promise<void>;
}

export interface EventStore extends EventQueue {
  /** History of an account, newest first, before `beforeSeq` when given. */
  search(accountId: string, query: HistoryQuery, limit: number, beforeSeq?: number): Promise<StoredEvent[]>;
  get(accountId: string, id: string): Promise<Event | undefined>;
  /** The seq of an event of the account; undefined when the history has no such event (any more). */
  seqOf(accountId: string, id: string): Promise<number | undefined>;
  /** Seqs of the account's events after `afterSeq` that match, newest first, at most `limit`: a stream's replay. */
  seqsAfter(accountId: string, query: StreamQuery, afterSeq: number, limit: number): Promise<number[]>;
  /** The account's events with these seqs, oldest first; seqs no longer in the history are left out. */
  bySeqs(accountId: string, seqs: readonly number[]): Promise<StoredEvent[]>;
  /**
   * Adds up to `maxEvents` handled events to the by-endpoint index, oldest first; returns how many seqs
   * it covered (0: it is up to date).
   */
  indexEndpoints(maxEvents: number): Promise<number>;
  /**
   * How many of the account's matching events fall in each bucket of `intervalMs` from `from` through `to`
   * (ms, inclusive): bucket n starts at from + n × intervalMs. Buckets without events are left out.
   */
  counts(accountId: string, query: HistoryQuery, from: number, to: number, intervalMs: number): Promise<{ bucket: number; count: number }[]>;
  /** Retention: deletes history older than `time` (ms) that has been handled; returns how many. */
  deleteOlderThan(time: number): Promise<number>;
}
