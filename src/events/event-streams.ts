import type { Endpoints } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { EventBus } from './event-bus.js';
import type { EventStore, StoredEvent, StreamQuery } from './event-store.js';
import { encodeCursor } from './history.js';

/** At most this many events of the history are replayed when a stream starts after an event (`since`). */
export const EVENT_STREAM_REPLAY_MAX = 1000;
/** Replayed events are read from the store this many at a time, as the client takes them. */
const REPLAY_PAGE = 100;

export interface EventStreamsOptions {
  /** Streams one account may have open at once (`IOTBRIDGE_EVENT_STREAMS_PER_ACCOUNT`, default 10); past it 429. */
  readonly perAccount: number;
  /** Streams this process serves at once (`IOTBRIDGE_EVENT_STREAMS_MAX`, default 1000); past it 503. */
  readonly max: number;
  /**
   * Bytes of live events one stream may hold for a client that does not read them
   * (`IOTBRIDGE_EVENT_STREAM_QUEUE_BYTES`, default 256 KiB); past it the stream ends with `overflow`.
   * One event is always let in when none waits, however large.
   */
  readonly queueBytes: number;
}

/** What a stream follows: the acting account's events, of any of these endpoints and types (all when absent). */
export interface EventStreamRequest {
  /** Endpoint ids or `k.<key>` references of the acting account. */
  readonly endpoints?: readonly string[] | undefined;
  readonly types?: readonly string[] | undefined;
  /** An event id of the account: matching events after it are replayed from the history first. */
  readonly since?: string | undefined;
}

/** An event as a stream hands it out: `json` is the same JSON as a `GET /history` item. */
export interface StreamedEvent {
  readonly id: string;
  readonly type: string;
  readonly json: string;
  /** `json`'s length in UTF-8 bytes. */
  readonly bytes: number;
}

/** More than {@link EVENT_STREAM_REPLAY_MAX} events matched after `since`: only the newest ones are replayed. */
export interface ReplayGap {
  /** The `since` event: the client had it. */
  readonly after: string;
  /** The first replayed event: the client has not got the events between `after` and it. */
  readonly before: string;
  /** `GET /history?next=` with the same filters pages from just before `before` back towards `after`. */
  readonly historyNext: string;
}

/** Why a stream stopped: its client fell behind by more than the queue holds, or it was closed. */
export type StreamEnd = 'overflow' | 'closed';

/**
 * The live events of accounts, as they are accepted (durable), in the order they are numbered: before any
 * trigger handles them and whatever the trigger backlog. Each stream is one client's: bounded (its events wait
 * in a queue of at most `queueBytes`; a client that falls further behind is cut off) and counted (per account
 * and per process). A stream sees only the events of the account it was opened in: not its sub-accounts', as
 * `GET /history`. In a cluster a stream sees the events every node accepts (`EventBus.watchAll`), read while
 * streams are open on this node.
 */
export class EventStreams {
  readonly #store: EventStore;
  readonly #endpoints: Endpoints;
  readonly #options: EventStreamsOptions;
  /** Open streams by account, listening or still being set up. */
  readonly #open = new Map<string, Set<EventStream>>();
  #count = 0;
  /** Cluster mode: every node's events, listened to while streams are open here. */
  readonly #watchAll: EventBus['watchAll'];
  #feed: { ready: Promise<void>; stop: () => void } | undefined;

  constructor(bus: EventBus, store: EventStore, endpoints: Endpoints, options: EventStreamsOptions) {
    this.#store = store;
    this.#endpoints = endpoints;
    this.#options = options;
    this.#watchAll = bus.watchAll?.bind(bus);
    if (!this.#watchAll) bus.watch((events) => this.#accepted(events));
  }

  /** Open streams and the bytes of events waiting in their queues (diagnostics, tests). */
  get stats(): { open: number; queuedBytes: number } {
    let queuedBytes = 0;
    for (const streams of this.#open.values()) for (const stream of streams) queuedBytes += stream.queuedBytes;
    return { open: this.#count, queuedBytes };
  }

  /**
   * Opens a stream of the acting account's events. With `since`, the matching events after it come first (the
   * newest {@link EVENT_STREAM_REPLAY_MAX}; `gap` says when there were more), then live ones: none twice, none
   * missing in between. Throws 429 `IOTB_EVENT_STREAMS_LIMIT` / 503 `IOTB_EVENT_STREAMS_BUSY` over the caps,
   * 404 for an unknown endpoint, 400 `IOTB_EVENT_SINCE_UNKNOWN` when `since` is not an event of the account's
   * history. The caller must `close()` the stream when its client goes.
   */
  async open(scope: Scope, request: EventStreamRequest): Promise<EventStream> {
    const accountId = scope.accountId;
    const streams = this.#open.get(accountId);
    if ((streams?.size ?? 0) >= this.#options.perAccount) throw new AppError('IOTB_EVENT_STREAMS_LIMIT', undefined, { limit: this.#options.perAccount });
    if (this.#count >= this.#options.max) throw new AppError('IOTB_EVENT_STREAMS_BUSY', undefined, { limit: this.#options.max });
    const stream = new EventStream(accountId, this.#options.queueBytes, this.#store, (closed) => this.#forget(closed));
    if (streams) streams.add(stream);
    else this.#open.set(accountId, new Set([stream]));
    this.#count++;
    try {
      if (this.#watchAll) {
        this.#feed ??= this.#watchAll((events) => this.#accepted(events));
        await this.#feed.ready;
      }
      const endpointIds = request.endpoints && [...new Set(await Promise.all(request.endpoints.map(async (ref) => (await this.#endpoints.get(scope, ref)).id)))];
      const query: StreamQuery = { types: request.types, endpointIds };
      let sinceSeq: number | undefined;
      if (request.since !== undefined) {
        sinceSeq = await this.#store.seqOf(accountId, request.since);
        if (sinceSeq === undefined) throw new AppError('IOTB_EVENT_SINCE_UNKNOWN', undefined, { since: request.since });
      }
      // Live events count from here; the replay is read after, so each event is in one or the other, or both
      // (then only the replay's copy is sent: accepted events are numbered in order within this process).
      stream.listen(query);
      if (sinceSeq !== undefined && request.since !== undefined) {
        const seqs = await this.#store.seqsAfter(accountId, query, sinceSeq, EVENT_STREAM_REPLAY_MAX + 1);
        await stream.replay(seqs, sinceSeq, request.since);
      }
      return stream;
    } catch (error) {
      stream.close();
      throw error;
    }
  }

  #forget(stream: EventStream): void {
    const streams = this.#open.get(stream.accountId);
    if (!streams?.delete(stream)) return;
    this.#count--;
    if (streams.size === 0) this.#open.delete(stream.accountId);
    if (this.#count === 0) {
      this.#feed?.stop();
      this.#feed = undefined;
    }
  }

  #accepted(events: readonly StoredEvent[]): void {
    if (this.#count === 0) return;
    for (const stored of events) {
      const streams = this.#open.get(stored.event.accountId);
      if (!streams) continue;
      let streamed: StreamedEvent | undefined;
      for (const stream of streams) {
        if (!stream.wants(stored)) continue;
        if (!streamed) {
          const json = JSON.stringify(stored.event);
          streamed = { id: stored.event.id, type: stored.event.type, json, bytes: Buffer.byteLength(json) };
        }
        stream.push(stored.seq, streamed);
      }
    }
  }
}

/** One client's stream: replayed events, then live ones, taken one at a time with `next()`. */
export class EventStream {
  readonly accountId: string;
  readonly #queueBytes: number;
  readonly #store: EventStore;
  readonly #onClose: (stream: EventStream) => void;
  #query: StreamQuery | undefined;
  #types: ReadonlySet<string> | undefined;
  #endpointIds: ReadonlySet<string> | undefined;
  /** Live events at or below this seq are before `since` or in the replay. */
  #after = 0;
  /** Seqs still to replay, oldest first, from `#replayAt`; the replayed events read so far and not taken. */
  #replaySeqs: number[] = [];
  #replayAt = 0;
  #page: StreamedEvent[] = [];
  #gap: ReplayGap | null = null;
  /** Live events waiting for the client, from `#head`. */
  #queue: { readonly seq: number; readonly event: StreamedEvent }[] = [];
  #head = 0;
  #queuedBytes = 0;
  #end: StreamEnd | undefined;
  #wake: (() => void) | undefined;

  constructor(accountId: string, queueBytes: number, store: EventStore, onClose: (stream: EventStream) => void) {
    this.accountId = accountId;
    this.#queueBytes = queueBytes;
    this.#store = store;
    this.#onClose = onClose;
  }

  /** Set when the replay left events out (more than {@link EVENT_STREAM_REPLAY_MAX} matched after `since`). */
  get gap(): ReplayGap | null {
    return this.#gap;
  }

  /** Why the stream stopped; undefined while it is open. */
  get ended(): StreamEnd | undefined {
    return this.#end;
  }

  /** Bytes of live events waiting for the client. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /**
   * The next event for the client, waiting for one when none is there; undefined once the stream ended (see
   * `ended`). One caller at a time.
   */
  async next(): Promise<StreamedEvent | undefined> {
    for (;;) {
      if (this.#end) return undefined;
      const replayed = this.#page.shift();
      if (replayed) return replayed;
      if (this.#replayAt < this.#replaySeqs.length) {
        await this.#readReplay();
        continue;
      }
      if (this.#head < this.#queue.length) {
        const live = this.#queue[this.#head]!;
        this.#queue[this.#head++] = undefined as never;
        this.#queuedBytes -= live.event.bytes;
        if (this.#head === this.#queue.length) {
          this.#queue = [];
          this.#head = 0;
        }
        return live.event;
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Ends the stream (idempotent): frees its place and drops what waits. */
  close(): void {
    this.#stop('closed');
  }

  /** From now on live events matching `query` are taken in (EventStreams.open). */
  listen(query: StreamQuery): void {
    this.#query = query;
    this.#types = query.types && query.types.length > 0 ? new Set(query.types) : undefined;
    this.#endpointIds = query.endpointIds && query.endpointIds.length > 0 ? new Set(query.endpointIds) : undefined;
  }

  /** Sets the replay: `seqs` newest first, as `seqsAfter` gives them, one more than may be replayed when there are more. */
  async replay(seqs: readonly number[], sinceSeq: number, since: string): Promise<void> {
    const kept = seqs.slice(0, EVENT_STREAM_REPLAY_MAX).reverse();
    this.#after = Math.max(sinceSeq, kept.at(-1) ?? sinceSeq);
    this.#replaySeqs = kept;
    this.#replayAt = 0;
    // Live events that came while the replay was looked up and are part of it.
    const waiting = this.#queue.slice(this.#head).filter(({ seq }) => seq > this.#after);
    this.#queue = waiting;
    this.#head = 0;
    this.#queuedBytes = waiting.reduce((sum, { event }) => sum + event.bytes, 0);
    if (seqs.length > EVENT_STREAM_REPLAY_MAX && kept.length > 0) {
      // The first page now: the gap names the first replayed event.
      await this.#readReplay();
      const first = this.#page[0];
      if (first) this.#gap = { after: since, before: first.id, historyNext: encodeCursor(kept[0]!) };
    }
  }

  /** Whether a live event is for this stream (EventStreams, for every accepted event of the account). */
  wants(stored: StoredEvent): boolean {
    if (!this.#query || this.#end) return false;
    const { event } = stored;
    if (this.#types && !this.#types.has(event.type)) return false;
    return !this.#endpointIds || (event.endpointId !== null && this.#endpointIds.has(event.endpointId));
  }

  /** A live event for this stream; one past the queue's bytes ends the stream with `overflow`. */
  push(seq: number, event: StreamedEvent): void {
    if (seq <= this.#after || this.#end) return;
    if (this.#head < this.#queue.length && this.#queuedBytes + event.bytes > this.#queueBytes) {
      this.#stop('overflow');
      return;
    }
    this.#queue.push({ seq, event });
    this.#queuedBytes += event.bytes;
    this.#wakeUp();
  }

  async #readReplay(): Promise<void> {
    const seqs = this.#replaySeqs.slice(this.#replayAt, this.#replayAt + REPLAY_PAGE);
    this.#replayAt += seqs.length;
    const rows = await this.#store.bySeqs(this.accountId, seqs);
    if (this.#end) return;
    // Events deleted meanwhile (retention) are left out.
    this.#page.push(
      ...rows.map(({ event }) => {
        const json = JSON.stringify(event);
        return { id: event.id, type: event.type, json, bytes: Buffer.byteLength(json) };
      }),
    );
    if (this.#replayAt >= this.#replaySeqs.length) this.#replaySeqs = [];
  }

  #stop(end: StreamEnd): void {
    if (this.#end) return;
    this.#end = end;
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#page = [];
    this.#replaySeqs = [];
    this.#onClose(this);
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
