import { hostname } from 'node:os';
import type { AdminStore, EventLag, RecentRuns, TableSize } from './model.js';

/** Executions the slowest-scripts view looks at (newest first, read by the primary key), and how many it lists. */
export const RECENT_RUNS_WINDOW = 10_000;
export const SLOWEST_MAX = 20;
/** How long counting table rows may take where the database has no cheap estimate (ms). */
export const STORAGE_COUNT_BUDGET_MS = 2000;

/** What the diagnostics read from the running service besides the database. */
export interface DiagnosticSources {
  /** The event bus: events waiting in memory, and whether newer ones wait in the store only. */
  readonly backlog: () => { inMemory: number; inStoreOnly: boolean };
  /** Script workers started, with their runs in flight. */
  readonly workers: () => Array<{ index: number; pid: number; inFlight: number }>;
  /** Script workers this node may start (each with the first run placed on it). */
  readonly workersConfigured: number;
  /** Connected endpoints per protocol (the endpoints' presence). */
  readonly connectedByProtocol: () => Promise<Array<{ protocol: string; count: number }>>;
  /** The device servers running in this process, by name, with their ports. */
  readonly deviceServers: () => Readonly<Record<string, number>>;
  readonly retention: { readonly historyDays: number; readonly executionDays: number; readonly logDays: number };
  readonly dialect: 'sqlite' | 'postgres';
  /** Accounts suspended now. */
  readonly suspended: () => number;
}

/**
 * The operator's views of the running service (`GET /super/events|triggers|devices|storage`): each is a few cheap
 * reads (counters in memory, queries on primary keys and statistics), safe to call on a loaded service.
 */
export class SuperDiagnostics {
  readonly #store: AdminStore;
  readonly #sources: DiagnosticSources;
  /** This process: one node of the installation (several nodes share PostgreSQL). */
  readonly nodeId = `${hostname()}:${process.pid}`;

  constructor(store: AdminStore, sources: DiagnosticSources) {
    this.#store = store;
    this.#sources = sources;
  }

  async events(now = Date.now()): Promise<{ nodeId: string; backlog: { inMemory: number; inStoreOnly: boolean }; lag: EventLag & { pending: number; oldestPendingAgeMs: number | null } }> {
    const lag = await this.#store.eventLag();
    return {
      nodeId: this.nodeId,
      backlog: this.#sources.backlog(),
      lag: { ...lag, pending: Math.max(0, lag.lastSeq - lag.handledThrough), oldestPendingAgeMs: lag.oldestPendingTime === null ? null : Math.max(0, now - lag.oldestPendingTime) },
    };
  }

  async triggers(top = SLOWEST_MAX): Promise<{ nodeId: string; workers: { configured: number; count: number; busy: number; inFlight: number; each: Array<{ index: number; pid: number; inFlight: number }> }; recent: RecentRuns }> {
    const each = this.#sources.workers();
    return {
      nodeId: this.nodeId,
      workers: { configured: this.#sources.workersConfigured, count: each.length, busy: each.filter((w) => w.inFlight > 0).length, inFlight: each.reduce((sum, w) => sum + w.inFlight, 0), each },
      recent: await this.#store.recentRuns(RECENT_RUNS_WINDOW, top),
    };
  }

  async devices(): Promise<{ nodes: Array<{ nodeId: string; servers: Record<string, number>; connected: Array<{ protocol: string; count: number }> }>; suspendedAccounts: number }> {
    const connected = await this.#sources.connectedByProtocol();
    return { nodes: [{ nodeId: this.nodeId, servers: { ...this.#sources.deviceServers() }, connected }], suspendedAccounts: this.#sources.suspended() };
  }

  async storage(): Promise<{ dialect: string; tables: TableSize[]; retention: DiagnosticSources['retention'] }> {
    return { dialect: this.#sources.dialect, tables: await this.#store.tableSizes(STORAGE_COUNT_BUDGET_MS), retention: this.#sources.retention };
  }
}
