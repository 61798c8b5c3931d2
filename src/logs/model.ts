// Account logs: what an account may see of its scripts, API calls, devices and changes (docs/reports-alerts.md
// "Logs"). Store implementation: src/store/log-store.ts (migration 0035).

/** Most severe first: a `level` filter keeps entries at that level or a more severe one. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where an entry comes from; more may be added (the store keeps any text). */
export const LOG_SOURCES = ['script', 'api', 'device', 'audit', 'alert'] as const;
export type LogSource = (typeof LOG_SOURCES)[number];

/** What a source writes: the store adds `seq`. */
export interface LogInput {
  readonly accountId: string;
  /** Epoch ms; defaults to when it is written. */
  readonly time?: number | undefined;
  readonly level: LogLevel;
  readonly source: LogSource;
  readonly message: string;
  readonly endpointId?: string | null | undefined;
  readonly endpointKey?: string | null | undefined;
  readonly triggerId?: string | null | undefined;
  /** A small JSON object (ids, status codes); kept as JSON text, at most LOG_DATA_MAX_BYTES. */
  readonly data?: Record<string, unknown> | null | undefined;
}

/** A row as stored: what `LogInput` becomes once checked and stamped. */
export interface LogRow {
  readonly accountId: string;
  readonly time: number;
  readonly level: LogLevel;
  readonly source: string;
  readonly message: string;
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly triggerId: string | null;
  /** JSON text, or null. */
  readonly data: string | null;
}

/** An entry as the API shows it. */
export interface LogEntry {
  /** `<time ms>.<seq>`: unique, and the entry's place in the newest-first order. */
  readonly id: string;
  readonly time: string;
  readonly level: LogLevel;
  readonly source: string;
  readonly message: string;
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly triggerId: string | null;
  readonly data: Record<string, unknown> | null;
}

/** A place in the newest-first order: entries strictly older than it come after it. */
export interface LogCursor {
  readonly time: number;
  readonly seq: number;
}

export interface LogFilter {
  /** Epoch ms, inclusive. */
  readonly from?: number | undefined;
  /** Epoch ms, exclusive. */
  readonly to?: number | undefined;
  /** The least severe level kept. */
  readonly level?: LogLevel | undefined;
  readonly sources?: readonly string[] | undefined;
  /** Case-insensitive substring of the message. */
  readonly text?: string | undefined;
  readonly endpointId?: string | undefined;
  readonly endpointKey?: string | undefined;
  readonly triggerId?: string | undefined;
}

/** One bounded step back through an account's log. */
export interface LogChunk {
  /** Matches within the step, newest first (at most the limit asked for). */
  readonly items: Array<LogEntry & { readonly cursor: LogCursor }>;
  /** The oldest place the step looked at; undefined when it looked at nothing (no entries left). */
  readonly reached: LogCursor | undefined;
  /** True when entries older than `reached` (and within `from`) may remain. */
  readonly more: boolean;
}

export interface LogStore {
  /** Writes rows in multi-row statements. */
  insert(rows: readonly LogRow[]): Promise<void>;
  /**
   * Looks at most `span` of the account's entries older than `before` (newest first, within the filter's time
   * range) and answers those of them that match, at most `limit`.
   */
  chunk(accountId: string, filter: LogFilter, before: LogCursor | undefined, span: number, limit: number): Promise<LogChunk>;
  /** Retention: deletes entries older than `time` (ms); returns how many. */
  deleteOlderThan(time: number): Promise<number>;
}
