// Super-Admin actions and diagnostics (docs/admin.md "Super-Admin"). Store implementation: src/store/admin-store.ts
// (migration 0041).

/** Per-account limits an operator sets; null: no limit. */
export interface AccountLimitValues {
  readonly maxEndpoints: number | null;
  readonly eventsPerSecond: number | null;
  readonly scriptCpuMsPerMinute: number | null;
}

export const NO_LIMITS: AccountLimitValues = { maxEndpoints: null, eventsPerSecond: null, scriptCpuMsPerMinute: null };

export interface Suspension {
  /** ISO time. */
  readonly at: string;
  readonly reason: string;
  /** The user id (or token id) of the Super-Admin who suspended the account. */
  readonly by: string;
}

/** What is stored for an account with a suspension or limits. */
export interface AccountControl {
  readonly accountId: string;
  readonly suspension: Suspension | null;
  readonly limits: AccountLimitValues;
}

/** An endpoint found across accounts (`GET /super/endpoints`). */
export interface EndpointLocation {
  readonly id: string;
  readonly key: string;
  readonly accountId: string;
  readonly accountName: string;
  readonly serviceId: string;
  readonly serviceName: string;
  readonly serviceType: string;
  readonly state: string;
  readonly lastSeen: string | null;
}

/** How far the event bus's consumers are behind what was accepted. */
export interface EventLag {
  /** The newest accepted event's seq (0 with an empty history). */
  readonly lastSeq: number;
  /** Every event at or below this seq is handled by the trigger engine and the other bus consumers (the saved cursor). */
  readonly handledThrough: number;
  /** Each consumer's saved cursor: `bus` (triggers, alerts, streams) and `endpoint-index` (the history's by-endpoint index). */
  readonly cursors: Array<{ readonly name: string; readonly handledThrough: number }>;
  /** Epoch ms of the oldest accepted event not yet handled; null when none waits. */
  readonly oldestPendingTime: number | null;
}

export interface SlowRun {
  readonly accountId: string;
  readonly accountName: string | null;
  readonly triggerId: string;
  readonly triggerName: string | null;
  readonly durationMs: number;
  readonly status: string;
  readonly startedAt: string;
}

export interface TriggerFailures {
  readonly accountId: string;
  readonly triggerId: string;
  readonly triggerName: string | null;
  readonly failed: number;
}

/** The newest executions (a bounded window read by the primary key): the slowest and who failed. */
export interface RecentRuns {
  /** Executions looked at. */
  readonly runs: number;
  readonly since: string | null;
  readonly slowest: SlowRun[];
  readonly failures: TriggerFailures[];
}

export interface TableSize {
  readonly table: string;
  /** Estimated (PostgreSQL statistics) or counted rows; null when the count ran out of time. */
  readonly rows: number | null;
  readonly estimated: boolean;
  /** On-disk bytes where the database says (PostgreSQL, SQLite with dbstat); else null. */
  readonly bytes: number | null;
}

export interface AdminStore {
  /** Every account with a suspension or limits (a few rows: loaded at start into memory). */
  controls(): Promise<AccountControl[]>;
  /** Writes the account's suspension (null: resumed) and limits. */
  save(control: AccountControl, updatedAt: number): Promise<void>;
  /** Endpoints with this key (or this id) in any account, with their account and service; at most `limit`. */
  findEndpoints(by: { key: string } | { id: string }, limit: number): Promise<EndpointLocation[]>;
  eventLag(): Promise<EventLag>;
  /** The newest `window` executions: the `top` slowest and the triggers that failed among them. */
  recentRuns(window: number, top: number): Promise<RecentRuns>;
  /** Rows and bytes per table, estimated cheaply; counting stops when `budgetMs` is spent. */
  tableSizes(budgetMs: number): Promise<TableSize[]>;
  /** Endpoints of one account (`maxEndpoints`). */
  countEndpoints(accountId: string): Promise<number>;
}
