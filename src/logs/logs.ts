import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import type { Event } from '../events/event.js';
import type { Execution } from '../triggers/executions.js';
import type { LogCursor, LogEntry, LogFilter, LogInput, LogRow, LogStore } from './model.js';
import { DEVICE_REFUSAL_WINDOW_MS, scriptRunEntries, Throttle } from './sources.js';

/** Characters of a message kept; the rest is cut with `…`. */
export const LOG_MESSAGE_MAX = 2000;
/** Bytes of an entry's `data` as JSON; larger data is replaced by `{"truncated": true}`. */
export const LOG_DATA_MAX_BYTES = 4096;
/** Entries one `GET /log` answers at most, and by default. */
export const LOG_LIMIT_MAX = 1000;
export const LOG_LIMIT_DEFAULT = 100;
/** How long a search may run (ms), at most and by default. */
export const LOG_TIMEOUT_MAX_MS = 60_000;
export const LOG_TIMEOUT_DEFAULT_MS = 10_000;
/** Entries one step of a search looks at: the work between two looks at the deadline. */
const SEARCH_SPAN = 2000;
/** Entries per step of a CSV export. */
const CSV_PAGE = 1000;

export interface LogsOptions {
  /** How long an entry may wait in memory before it is written (ms). */
  readonly flushIntervalMs?: number | undefined;
  /** Entries that make a write at once, and the most one statement carries. */
  readonly flushRows?: number | undefined;
  /** Entries held in memory at most while the store lags; past it the oldest debug/info entries go first. */
  readonly bufferMax?: number | undefined;
}

export interface LogPage {
  /** Newest first. */
  readonly items: LogEntry[];
  /** True when the search ran out of time before it had looked at every entry in the range. */
  readonly partial: boolean;
  /** The time the search looked back to; null when it looked at the account's whole log. */
  readonly searchedTo: string | null;
  /** Where the next page starts (`next=`): when the limit was reached or the time ran out; null after the last. */
  readonly next: string | null;
}

export interface SearchOptions {
  readonly limit: number;
  readonly timeoutMs: number;
  readonly next?: LogCursor | undefined;
}

/**
 * The accounts' logs: entries from scripts, the API, devices and audits are written in batches (one multi-row
 * insert every ~250 ms or 500 entries, never one statement per entry), and searched newest first in bounded
 * steps that stop when the caller's time is up, answering what was found so far (`partial`).
 */
export class Logs {
  readonly #store: LogStore;
  readonly #intervalMs: number;
  readonly #rows: number;
  readonly #max: number;
  #buffer: LogRow[] = [];
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #dropped = 0;
  #written = 0;
  #stopped = false;
  readonly #deviceThrottle = new Throttle(DEVICE_REFUSAL_WINDOW_MS);
  readonly #watchers: Array<(problem: string, detail: Record<string, unknown>) => void> = [];

  constructor(store: LogStore, options: LogsOptions = {}) {
    this.#store = store;
    this.#intervalMs = options.flushIntervalMs ?? 250;
    this.#rows = options.flushRows ?? 500;
    this.#max = options.bufferMax ?? 20_000;
  }

  /** Told when entries are dropped or a write fails (the service logs it); called synchronously. */
  watch(watcher: (problem: string, detail: Record<string, unknown>) => void): void {
    this.#watchers.push(watcher);
  }

  /** Entries written, dropped (buffer full, or a write failed), and waiting in memory. */
  get stats(): { written: number; dropped: number; buffered: number } {
    return { written: this.#written, dropped: this.#dropped, buffered: this.#buffer.length };
  }

  /** Queues an entry; it is written within ~250 ms. Never throws and never waits: sources call it on hot paths. */
  write(input: LogInput): void {
    if (this.#stopped) return;
    this.#buffer.push(toRow(input));
    if (this.#buffer.length > this.#max) this.#shed();
    this.#schedule();
  }

  /** What a trigger run logged, and its error if it failed (nothing for a quiet successful run). */
  scriptRun(execution: Execution, event: Event): void {
    if (execution.logs.length === 0 && execution.status === 'success') return;
    for (const entry of scriptRunEntries(execution, event)) this.write(entry);
  }

  /**
   * A device's message or log-in refused for a reason its account should see, at warn level; once per endpoint
   * and `reason` (default: the message) in DEVICE_REFUSAL_WINDOW_MS: a device retrying, or someone trying its
   * key, must not flood the log.
   */
  device(input: Omit<LogInput, 'source' | 'level'> & { readonly endpointId: string; readonly reason?: string }): void {
    const { reason, ...entry } = input;
    if (this.#deviceThrottle.allow(`${entry.accountId}\u0000${entry.endpointId}\u0000${reason ?? entry.message}`)) this.write({ ...entry, source: 'device', level: 'warn' });
  }

  /** Writes entries straight to the store, in multi-row statements (imports, tests, benchmarks). */
  async append(inputs: readonly LogInput[]): Promise<void> {
    await this.#store.insert(inputs.map(toRow));
  }

  /** Writes everything queued so far. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#writing || this.#buffer.length > 0) await (this.#writing ?? this.#writeBatch());
  }

  /** Takes no more entries and writes those queued (before storage closes). */
  async stop(): Promise<void> {
    await this.flush();
    this.#stopped = true;
  }

  /**
   * The account's entries matching `filter`, newest first, at most `limit`. The log is walked back a bounded
   * step at a time; when `timeoutMs` has passed after a step, the search answers what it found with
   * `partial: true`, how far back it looked, and `next` to go on from there.
   */
  async search(scope: Scope, filter: LogFilter, options: SearchOptions): Promise<LogPage> {
    const deadline = Date.now() + options.timeoutMs;
    const items: LogEntry[] = [];
    let before = options.next;
    for (;;) {
      const chunk = await this.#store.chunk(scope.accountId, filter, before, SEARCH_SPAN, options.limit - items.length);
      for (const { cursor: _cursor, ...entry } of chunk.items) items.push(entry);
      const last = chunk.items.at(-1);
      if (items.length >= options.limit && last) return { items, partial: false, searchedTo: last.time, next: encodeCursor(last.cursor) };
      if (!chunk.more || !chunk.reached) return { items, partial: false, searchedTo: filter.from === undefined ? null : isoTime(filter.from), next: null };
      before = chunk.reached;
      if (Date.now() >= deadline) return { items, partial: true, searchedTo: isoTime(before.time), next: encodeCursor(before) };
    }
  }

  /** Every matching entry, newest first, a step at a time: for the CSV, which never holds more than a step. */
  async *entries(scope: Scope, filter: LogFilter, limit = Number.POSITIVE_INFINITY): AsyncGenerator<LogEntry> {
    let before: LogCursor | undefined;
    let left = limit;
    while (left > 0) {
      const page = Math.min(CSV_PAGE, left);
      const chunk = await this.#store.chunk(scope.accountId, filter, before, SEARCH_SPAN, page);
      for (const { cursor: _cursor, ...entry } of chunk.items) yield entry;
      left -= chunk.items.length;
      // A full page may have left matches in its step: go on after its last entry, else after the step.
      if (chunk.items.length === page) before = chunk.items.at(-1)!.cursor;
      else if (chunk.more && chunk.reached) before = chunk.reached;
      else return;
    }
  }

  /** Retention: deletes entries older than `time` (ms); returns how many. */
  deleteOlderThan(time: number): Promise<number> {
    return this.#store.deleteOlderThan(time);
  }

  #schedule(): void {
    // A write under way schedules the next one when it ends.
    if (this.#writing) return;
    if (this.#buffer.length >= this.#rows) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      void this.#writeBatch();
    } else if (!this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.#writeBatch();
      }, this.#intervalMs);
      this.#timer.unref();
    }
  }

  #writeBatch(): Promise<void> {
    if (this.#writing) return this.#writing;
    const batch = this.#buffer.splice(0, this.#rows);
    if (batch.length === 0) return Promise.resolve();
    const writing = this.#store.insert(batch).then(
      () => void (this.#written += batch.length),
      (error: unknown) => {
        // Not retried: a batch the store refuses would block every later one.
        this.#dropped += batch.length;
        this.#tell('log entries not written', { err: error, entries: batch.length });
      },
    );
    this.#writing = writing.finally(() => {
      this.#writing = undefined;
      if (this.#buffer.length > 0) this.#schedule();
    });
    return this.#writing;
  }

  /** The buffer is full: a tenth of it goes, the oldest debug and info entries first, then the oldest others. */
  #shed(): void {
    const want = Math.max(1, Math.floor(this.#max / 10));
    let dropped = 0;
    const kept: LogRow[] = [];
    for (const row of this.#buffer) {
      if (dropped < want && (row.level === 'debug' || row.level === 'info')) dropped++;
      else kept.push(row);
    }
    if (dropped < want) {
      const more = Math.min(want - dropped, kept.length);
      kept.splice(0, more);
      dropped += more;
    }
    this.#buffer = kept;
    this.#dropped += dropped;
    this.#tell('log entries dropped: the store does not keep up', { dropped, droppedTotal: this.#dropped });
  }

  #tell(problem: string, detail: Record<string, unknown>): void {
    for (const watcher of this.#watchers) watcher(problem, detail);
  }
}

/** `<time ms>.<seq>`: an entry's id, and the `next` of a page. */
export function encodeCursor(cursor: LogCursor): string {
  return `${cursor.time}.${cursor.seq}`;
}

/** Undefined when the text is not a cursor. */
export function decodeCursor(text: string): LogCursor | undefined {
  const match = /^(\d{1,15})\.(\d{1,18})$/.exec(text);
  return match ? { time: Number(match[1]), seq: Number(match[2]) } : undefined;
}

function toRow(input: LogInput): LogRow {
  return {
    accountId: input.accountId,
    time: input.time ?? Date.now(),
    level: input.level,
    source: input.source,
    message: cut(clean(input.message)),
    endpointId: input.endpointId ?? null,
    endpointKey: input.endpointKey === undefined || input.endpointKey === null ? null : clean(input.endpointKey),
    triggerId: input.triggerId ?? null,
    data: dataJson(input.data),
  };
}

function cut(message: string): string {
  return message.length > LOG_MESSAGE_MAX ? `${message.slice(0, LOG_MESSAGE_MAX)}…` : message;
}

/** PostgreSQL text holds no NUL character. */
function clean(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '') : text;
}

function dataJson(data: Record<string, unknown> | null | undefined): string | null {
  if (data === undefined || data === null) return null;
  let json: string;
  try {
    json = JSON.stringify(data);
  } catch {
    return '{"truncated":true}';
  }
  return Buffer.byteLength(json) > LOG_DATA_MAX_BYTES ? '{"truncated":true}' : json;
}
