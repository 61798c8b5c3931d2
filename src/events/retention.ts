import type { Logger } from 'pino';
import type { ExecutionStore } from '../triggers/executions.js';
import type { EventStore } from './event-store.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface RetentionOptions {
  /** Days events stay in the history; 0 keeps them forever (`IOTBRIDGE_HISTORY_RETENTION_DAYS`). */
  readonly historyDays: number;
  /** Days execution records stay; 0 keeps them forever (`IOTBRIDGE_EXECUTION_RETENTION_DAYS`). */
  readonly executionDays: number;
  /** Report entries past their own report's retention (src/reports/). */
  readonly reports?: { deleteExpired(now: number): Promise<number> };
  /** Account log entries older than `days` (`IOTBRIDGE_LOG_RETENTION_DAYS`; 0 keeps them forever). */
  readonly logs?: { readonly days: number; deleteOlderThan(time: number): Promise<number> };
  readonly logger: Logger;
}

/** Deletes history, execution records and report entries older than their retention periods: at start, then hourly. */
export class RetentionJob {
  readonly #events: EventStore;
  readonly #executions: ExecutionStore;
  readonly #options: RetentionOptions;
  #timer: NodeJS.Timeout | undefined;
  #pass: Promise<unknown> | undefined;

  constructor(events: EventStore, executions: ExecutionStore, options: RetentionOptions) {
    this.#events = events;
    this.#executions = executions;
    this.#options = options;
  }

  start(): void {
    if (this.#options.historyDays === 0 && this.#options.executionDays === 0 && !this.#options.reports && !this.#options.logs?.days) return;
    this.#pass = this.run();
    this.#timer = setInterval(() => {
      this.#pass = this.run();
    }, HOUR);
    this.#timer.unref();
  }

  /** Stops the schedule and waits for a pass under way, so storage can close after it. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pass;
  }

  /** One pass; returns how many events, execution records, report entries (and log entries, with `logs`) were deleted. */
  async run(): Promise<{ events: number; executions: number; reportEntries: number; logEntries?: number }> {
    const { historyDays, executionDays, reports, logs, logger } = this.#options;
    const deleted: { events: number; executions: number; reportEntries: number; logEntries?: number } = { events: 0, executions: 0, reportEntries: 0 };
    try {
      if (historyDays > 0) deleted.events = await this.#events.deleteOlderThan(Date.now() - historyDays * DAY);
      if (executionDays > 0) deleted.executions = await this.#executions.deleteOlderThan(Date.now() - executionDays * DAY);
      if (reports) deleted.reportEntries = await reports.deleteExpired(Date.now());
      if (logs && logs.days > 0) deleted.logEntries = await logs.deleteOlderThan(Date.now() - logs.days * DAY);
      if (deleted.events + deleted.executions + deleted.reportEntries + (deleted.logEntries ?? 0) > 0) logger.info({ ...deleted, historyDays, executionDays }, 'retention');
    } catch (error) {
      logger.error({ err: error }, 'retention failed');
    }
    return deleted;
  }
}
