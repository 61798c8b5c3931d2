import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { PresenceChange } from '../domain/endpoints.js';
import type { Event } from '../events/event.js';
import { dataJsonOf } from '../events/event-json.js';
import type { Execution } from '../triggers/executions.js';
import { executionRow, isPlainExecution } from './execution-rows.js';
import type { Schema } from './schema.js';
import { toJson } from './schema.js';
import { toMs } from './sql.js';

/**
 * How long a write nobody waits on (an execution record, the handled cursor) may wait for company before it
 * commits. A commit writes every page it touched (the last leaf of each table and index, at least), so the
 * records of 10 ms commit in one transaction for about the cost of one tick's.
 */
const LAZY_MS = 10;

/**
 * Rows (events, execution records) written by one INSERT at most. A statement's run has a fixed cost (the step,
 * its reset, AUTOINCREMENT's read and write of `sqlite_sequence`) that a multi-row VALUES list pays once: timed
 * alone, 4.5–5.0 µs an event one row at a time, 3.5–3.6 with 16 or more rows a statement (docs/performance.md,
 * session 32).
 */
const ROWS_PER_INSERT = 16;
const EVENT_COLUMNS = 8;
const EXECUTION_COLUMNS = 14;
const EXECUTIONS_HEAD = 'insert into executions (id, account_id, trigger_id, event_id, event_type, started_at, duration_ms, status, error, line, logs, test, context, groups)';
/**
 * Most runs' records: no error, no log, not a test, empty context and groups. Those six columns are constants in the
 * statement rather than parameters: timed alone, 0.06–1.8 µs a row less (~0.5) (docs/performance.md, session 37).
 */
const PLAIN_EXECUTION_COLUMNS = 8;
const PLAIN_EXECUTION_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, null, null, '[]', 0, '{}', '[]')";

interface Pending {
  readonly work: () => unknown;
  readonly resolve: (value: never) => void;
  readonly reject: (error: unknown) => void;
}

/** Writes committed together: accepted events (someone waits for them) or the lazy ones. */
interface Queue {
  pending: Pending[];
  scheduled: boolean;
}

/**
 * The embedded database's writes on the event pipeline: accepting events, acknowledging handled ones and
 * recording trigger executions. Under load these are most of the service's work, so on SQLite they skip
 * the query builder (prepared statements, bound once) and what is written meanwhile commits in ONE
 * transaction: a commit costs more than a dozen row inserts. Accepted events commit at once, with the
 * writes waiting (someone waits for them), other urgent writes at the next turn of the event loop;
 * execution records and the handled cursor within LAZY_MS, in their own transaction and in the order they
 * were made, so the cursor never commits ahead of the records of the events it covers (those events
 * committed before they were handled).
 */
export class SqliteHotPath {
  readonly #db: Kysely<Schema>;
  readonly #sqlite: SQLite.Database;
  readonly #urgent: Queue = { pending: [], scheduled: false };
  readonly #lazy: Queue = { pending: [], scheduled: false };
  /** Executions recorded since the last lazy commit began, written by one pending write. */
  #executions: { readonly rows: Execution[]; readonly done: Promise<void> } | undefined;
  readonly #insertEvents: MultiRowInsert;
  readonly #saveCursor: SQLite.Statement;
  readonly #insertExecutions: MultiRowInsert;
  readonly #insertPlainExecutions: MultiRowInsert;
  readonly #presence: SQLite.Statement;
  readonly #presenceAndDetails: SQLite.Statement;
  /** Statements of `execute`, by SQL text (a few fixed ones: its callers pass constants). */
  readonly #statements = new Map<string, SQLite.Statement>();
  /**
   * A batch's writes in one transaction, and one write alone (when the batch failed). Wrapped once: better-sqlite3's
   * `transaction()` makes four wrapper functions each call, ~1 % of the main thread when made at every commit.
   */
  readonly #commitBatch: (batch: readonly Pending[]) => unknown[];
  readonly #commitOne: (item: Pending) => unknown;

  constructor(db: Kysely<Schema>, sqlite: SQLite.Database) {
    this.#db = db;
    this.#sqlite = sqlite;
    this.#saveCursor = sqlite.prepare(
      "insert into event_cursor (name, handled_through) values ('bus', ?) on conflict (name) do update set handled_through = max(handled_through, excluded.handled_through)",
    );
    this.#insertEvents = new MultiRowInsert(sqlite, 'insert into events (id, account_id, type, service_id, endpoint_id, endpoint_key, time, data)', EVENT_COLUMNS);
    this.#insertExecutions = new MultiRowInsert(sqlite, EXECUTIONS_HEAD, EXECUTION_COLUMNS);
    this.#insertPlainExecutions = new MultiRowInsert(sqlite, EXECUTIONS_HEAD, PLAIN_EXECUTION_COLUMNS, PLAIN_EXECUTION_ROW);
    // Heard-from is replaced only when the protocol knows it (both or neither).
    const presence = 'update endpoints set state = ?, last_seen_at = ?, missing_after = ?, heard_protocol = coalesce(?, heard_protocol), heard_addr = coalesce(?, heard_addr)';
    this.#presence = sqlite.prepare(`${presence} where id = ?`);
    this.#presenceAndDetails = sqlite.prepare(`${presence}, status_details = json_patch(status_details, ?), updated_at = ? where id = ? returning status_details`);
    this.#commitBatch = sqlite.transaction((batch: readonly Pending[]) => batch.map((item) => item.work()));
    this.#commitOne = sqlite.transaction((item: Pending) => item.work());
  }

  /**
   * One write of a hot path elsewhere (LwM2M registrations) in the next commit, with the turn's events:
   * `sql` is a constant of the caller's, `parameters` its values. Resolves with the rows changed.
   */
  execute(sql: string, parameters: readonly unknown[]): Promise<number> {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, (statement = this.#sqlite.prepare(sql)));
    const prepared = statement;
    return this.#write(() => prepared.run(...parameters).changes);
  }

  /**
   * A device connected, was heard from or went away (`EndpointStore.setPresence`). A fleet reconnecting
   * after an outage makes thousands a second: they commit together with the events of the same turn.
   * Resolves with the status details as now stored (JSON text) when `details` were given.
   */
  setPresence(endpointId: string, change: PresenceChange): Promise<string | undefined> {
    const lastSeenAt = toMs(change.lastSeenAt);
    const missingAfter = change.missingAfter === null ? null : toMs(change.missingAfter);
    const protocol = change.heardFrom?.protocol ?? null;
    const address = change.heardFrom?.remoteAddr ?? null;
    const details = change.details && Object.keys(change.details).length > 0 ? toJson(change.details) : undefined;
    return this.#write(() => {
      if (details === undefined) {
        this.#presence.run(change.state, lastSeenAt, missingAfter, protocol, address, endpointId);
        return undefined;
      }
      const row = this.#presenceAndDetails.get(change.state, lastSeenAt, missingAfter, protocol, address, details, lastSeenAt, endpointId) as { status_details: string } | undefined;
      return row?.status_details;
    });
  }

  /**
   * Stores events in the history; resolves with their sequence numbers once committed. The bus calls it once a
   * turn, from its own `setImmediate` with the turn's events: it commits now, with the writes waiting, instead
   * of a turn later (an immediate scheduled from an immediate runs in the next turn, ~0.3 ms under load).
   */
  accept(events: readonly Event[]): Promise<number[]> {
    return this.#write(() => {
      const seqs = new Array<number>(events.length);
      for (let start = 0; start < events.length; start += ROWS_PER_INSERT) {
        const count = Math.min(ROWS_PER_INSERT, events.length - start);
        const values = new Array<unknown>(count * EVENT_COLUMNS);
        for (let i = 0, v = 0; i < count; i++) {
          const event = events[start + i]!;
          values[v++] = event.id;
          values[v++] = event.accountId;
          values[v++] = event.type;
          values[v++] = event.serviceId;
          values[v++] = event.endpointId;
          values[v++] = event.endpointKey;
          values[v++] = toMs(event.time);
          values[v++] = dataJsonOf(event);
        }
        // AUTOINCREMENT numbers the rows of one VALUES list one after another, in its order: the last one's
        // seq gives them all (the write lock is held, so no other writer's row comes between).
        const last = this.#insertEvents.run(values);
        for (let i = 0; i < count; i++) seqs[start + i] = last - count + 1 + i;
      }
      return seqs;
    }, 'now');
  }

  saveHandledThrough(seq: number): Promise<void> {
    return this.#write(() => {
      this.#saveCursor.run(seq);
    }, false);
  }

  /**
   * Records one execution: it joins the executions recorded since the last lazy commit began (one write in
   * the queue, at the place of the first of them), so it commits no later than anything written after it.
   */
  recordExecution(execution: Execution): Promise<void> {
    if (this.#executions) {
      this.#executions.rows.push(execution);
      return this.#executions.done;
    }
    const rows = [execution];
    const done = this.#write(() => this.#writeExecutions(rows), false);
    this.#executions = { rows, done };
    return done;
  }

  recordExecutions(executions: readonly Execution[]): Promise<void> {
    return this.#write(() => this.#writeExecutions(executions), false);
  }

  /** In their order: each run of plain records (`isPlainExecution`) or of others, ROWS_PER_INSERT rows a statement. */
  #writeExecutions(executions: readonly Execution[]): void {
    for (let start = 0; start < executions.length; ) {
      const plain = isPlainExecution(executions[start]!);
      let count = 1;
      while (count < ROWS_PER_INSERT && start + count < executions.length && isPlainExecution(executions[start + count]!) === plain) count++;
      const values = new Array<unknown>(count * (plain ? PLAIN_EXECUTION_COLUMNS : EXECUTION_COLUMNS));
      for (let i = 0, v = 0; i < count; i++) {
        const row = executionRow(executions[start + i]!);
        values[v++] = row.id;
        values[v++] = row.account_id;
        values[v++] = row.trigger_id;
        values[v++] = row.event_id;
        values[v++] = row.event_type;
        values[v++] = row.started_at;
        values[v++] = row.duration_ms;
        values[v++] = row.status;
        if (plain) continue;
        values[v++] = row.error;
        values[v++] = row.line;
        values[v++] = row.logs;
        values[v++] = row.test;
        values[v++] = row.context;
        values[v++] = row.groups;
      }
      (plain ? this.#insertPlainExecutions : this.#insertExecutions).run(values);
      start += count;
    }
  }

  /** `now`: committed at once with the urgent writes waiting; `true`: at the next turn; `false`: within LAZY_MS. */
  #write<T>(work: () => T, urgent: boolean | 'now' = true): Promise<T> {
    const queue = urgent ? this.#urgent : this.#lazy;
    return new Promise<T>((resolve, reject) => {
      queue.pending.push({ work, resolve, reject });
      if (urgent === 'now') {
        // A flush scheduled already stays: it commits what is written after this one.
        void this.#flush(queue);
        return;
      }
      if (queue.scheduled) return;
      queue.scheduled = true;
      if (urgent) setImmediate(() => void this.#flush(queue));
      else setTimeout(() => void this.#flush(queue), LAZY_MS);
    });
  }

  async #flush(queue: Queue): Promise<void> {
    const batch = queue.pending;
    queue.pending = [];
    queue.scheduled = false;
    // Executions recorded from now on are written by the next lazy commit.
    if (queue === this.#lazy) this.#executions = undefined;
    if (batch.length === 0) return;
    // Kysely's connection lock: no query-builder transaction is open on the connection meanwhile.
    await this.#db
      .connection()
      .execute(async () => {
        try {
          const results = this.#commitBatch(batch);
          batch.forEach((item, i) => item.resolve(results[i] as never));
        } catch {
          // One bad write must not fail the others: each on its own.
          for (const item of batch) {
            try {
              item.resolve(this.#commitOne(item) as never);
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

/** An INSERT of one to ROWS_PER_INSERT rows, a statement for each count prepared at first use. */
class MultiRowInsert {
  readonly #sqlite: SQLite.Database;
  /** `insert into <table> (<columns>)`. */
  readonly #head: string;
  readonly #columns: number;
  readonly #row: string;
  /** The statement of n rows at [n - 1]. */
  readonly #statements: SQLite.Statement[] = [];

  /** `row`: one row's VALUES with its `columns` parameters (default: all parameters). */
  constructor(sqlite: SQLite.Database, head: string, columns: number, row = `(${new Array<string>(columns).fill('?').join(', ')})`) {
    this.#sqlite = sqlite;
    this.#head = head;
    this.#columns = columns;
    this.#row = row;
  }

  /** Writes `values` (`columns` of them a row, at most ROWS_PER_INSERT rows); returns the last row's rowid. */
  run(values: readonly unknown[]): number {
    const rows = values.length / this.#columns;
    let statement = this.#statements[rows - 1];
    if (!statement) {
      this.#statements[rows - 1] = statement = this.#sqlite.prepare(`${this.#head} values ${new Array<string>(rows).fill(this.#row).join(', ')}`);
    }
    return Number(statement.run(values).lastInsertRowid);
  }
}
