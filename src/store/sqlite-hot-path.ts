import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Event } from '../events/event.js';
import type { Execution } from '../triggers/executions.js';
import type { Schema } from './schema.js';
import { toJson } from './schema.js';
import { toMs } from './sql.js';

/**
 * How long a write nobody waits on (an execution record, the handled cursor) may wait for company: it
 * commits with the next accepted events, or after this long. Half the commits of a saturated trigger
 * pipeline were of these alone.
 */
const LAZY_MS = 2;

interface Pending {
  readonly work: () => unknown;
  readonly resolve: (value: never) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * The embedded database's writes on the event pipeline: accepting events, acknowledging handled ones and
 * recording trigger executions. Under load these are most of the service's work, so on SQLite they skip
 * the query builder (prepared statements, bound once) and what is written meanwhile commits in ONE
 * transaction: a commit costs more than a dozen row inserts. Accepted events commit at the next turn of
 * the event loop (someone waits for them); the other writes within LAZY_MS. Writes commit in the order
 * they were made, so the handled cursor never commits ahead of the execution records of the events it covers.
 */
export class SqliteHotPath {
  readonly #db: Kysely<Schema>;
  readonly #sqlite: SQLite.Database;
  #pending: Pending[] = [];
  /** A commit is due at the next turn ('now') or within LAZY_MS ('later'). */
  #scheduled: 'now' | 'later' | undefined;
  /** Executions recorded since the last commit began, written by one pending write. */
  #executions: { readonly rows: Execution[]; readonly done: Promise<void> } | undefined;
  readonly #insertEvent: SQLite.Statement;
  readonly #saveCursor: SQLite.Statement;
  readonly #insertExecution: SQLite.Statement;

  constructor(db: Kysely<Schema>, sqlite: SQLite.Database) {
    this.#db = db;
    this.#sqlite = sqlite;
    this.#insertEvent = sqlite.prepare(
      'insert into events (id, account_id, type, service_id, endpoint_id, endpoint_key, time, data) values (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#saveCursor = sqlite.prepare(
      "insert into event_cursor (name, handled_through) values ('bus', ?) on conflict (name) do update set handled_through = max(handled_through, excluded.handled_through)",
    );
    this.#insertExecution = sqlite.prepare(
      'insert into executions (id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups)' +
        ' values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
  }

  /** Stores events in the history; resolves with their sequence numbers once committed. */
  accept(events: readonly Event[]): Promise<number[]> {
    return this.#write(() =>
      events.map((event) => {
        const { lastInsertRowid } = this.#insertEvent.run(
          event.id,
          event.accountId,
          event.type,
          event.serviceId,
          event.endpointId,
          event.endpointKey,
          toMs(event.time),
          toJson(event.data),
        );
        return Number(lastInsertRowid);
      }),
    );
  }

  saveHandledThrough(seq: number): Promise<void> {
    return this.#write(() => {
      this.#saveCursor.run(seq);
    }, false);
  }

  /**
   * Records one execution: it joins the executions recorded since the last commit began (one write in
   * the queue, at the place of the first of them), so it commits no later than anything written after it.
   */
  recordExecution(execution: Execution): Promise<void> {
    if (this.#executions) {
      this.#executions.rows.push(execution);
      return this.#executions.done;
    }
    const rows = [execution];
    const done = this.#write(() => this.#insertExecutions(rows), false);
    this.#executions = { rows, done };
    return done;
  }

  recordExecutions(executions: readonly Execution[]): Promise<void> {
    return this.#write(() => this.#insertExecutions(executions), false);
  }

  #insertExecutions(executions: readonly Execution[]): void {
    for (const execution of executions) {
      this.#insertExecution.run(
        execution.id,
        execution.accountId,
        execution.triggerId,
        execution.eventId,
        execution.eventType,
        toMs(execution.startedAt),
        execution.durationMs,
        execution.status,
        execution.error,
        execution.line,
        execution.logs.length === 0 ? '[]' : toJson(execution.logs),
        execution.test ? 1 : 0,
        isEmpty(execution.context) ? '{}' : toJson(execution.context),
        execution.groups.length === 0 ? '[]' : toJson(execution.groups),
      );
    }
  }

  #write<T>(work: () => T, urgent = true): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ work, resolve: resolve, reject });
      if (urgent) {
        if (this.#scheduled === 'now') return;
        this.#scheduled = 'now';
        setImmediate(() => void this.#flush());
      } else if (this.#scheduled === undefined) {
        this.#scheduled = 'later';
        setTimeout(() => {
          if (this.#scheduled === 'later') void this.#flush();
        }, LAZY_MS);
      }
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = undefined;
    // Executions recorded from now on are written by the next commit.
    this.#executions = undefined;
    if (batch.length === 0) return;
    // Kysely's connection lock: no query-builder transaction is open on the connection meanwhile.
    await this.#db
      .connection()
      .execute(async () => {
      try {
        const results = this.#sqlite.transaction(() => batch.map((item) => item.work()))();
        batch.forEach((item, i) => item.resolve(results[i] as never));
      } catch {
        // One bad write must not fail the others: each on its own.
        for (const item of batch) {
          try {
            item.resolve(this.#sqlite.transaction(item.work)() as never);
          } catch (error) {
            item.reject(error);
          }
        }
      }
      })
      .catch((error: unknown) => {
        for (const item of batch) item.reject(error);
      });
  }
}

/** Most runs add no context: its JSON is then known without serialising it. */
function isEmpty(object: Record<string, unknown>): boolean {
  for (const _key in object) return false;
  return true;
}
