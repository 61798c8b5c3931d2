import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import { isoTime, timeMs } from '../domain/time.js';
import { AppError } from '../errors.js';
import type { ColumnType, EntryQuery, Report, ReportColumn, ReportEntry, ReportStore } from './model.js';
import { checkSchedule, nextBoundary, type ScheduleInput } from './report-schedule.js';

/** Columns a report may have (an entry with more new keys is refused). */
export const REPORT_COLUMNS_MAX = 200;
/** Bytes of one entry as JSON. */
export const REPORT_ENTRY_MAX_BYTES = 64 * 1024;
/** Reports one account may have. */
export const REPORTS_MAX = 1000;
/** Entries one page (`listEntries`, `GET /reports/{id}/entries`) returns at most. */
export const ENTRIES_PAGE_MAX = 1000;

export interface ReportInput {
  readonly name: string;
  readonly description?: string | null | undefined;
  readonly columns?: readonly ReportColumn[] | undefined;
  readonly retentionDays?: number | undefined;
  /** Mail the report as CSV at the end of every period; null stops it. */
  readonly schedule?: ScheduleInput | null | undefined;
}

export interface ReportsOptions {
  /** Whether the service can send mail (IOTBRIDGE_SMTP_URL): a schedule needs it. */
  readonly mailConfigured: boolean;
}

export interface EntryPage {
  readonly items: ReportEntry[];
  /** The cursor of the next page (`next`), null after the last. */
  readonly next: number | null;
}

/** The retention a report gets unless it names one (days). */
const DEFAULT_RETENTION_DAYS = 90;

/**
 * Reports: named tables of entries an account fills from triggers (`report.publish`) or the API, read back as
 * pages or as CSV. Columns are declared or inferred from the entries and kept stable: a key seen for the first
 * time is appended, none is ever dropped or reordered, so every CSV of a report has the same columns in the same
 * order. A report is created on its first publish when none of that name exists.
 */
export class Reports {
  readonly #store: ReportStore;
  /** Each account's reports by name, as publishing reads them (one process; every change here updates it). */
  readonly #byName = new Map<string, Promise<Report | undefined>>();

  readonly #mailConfigured: boolean;

  constructor(store: ReportStore, options: ReportsOptions) {
    this.#store = store;
    this.#mailConfigured = options.mailConfigured;
  }

  list(scope: Scope): Promise<Report[]> {
    return this.#store.list(scope.accountId);
  }

  /** By id, or by name when no report has that id. */
  async get(scope: Scope, ref: string): Promise<Report> {
    const found = (await this.#store.get(scope.accountId, ref)) ?? (await this.#named(scope.accountId, ref));
    if (!found) throw new AppError('IOTB_REPORT_NOT_FOUND');
    return found;
  }

  async create(scope: Scope, input: ReportInput): Promise<Report> {
    if ((await this.#store.list(scope.accountId)).length >= REPORTS_MAX) throw new AppError('IOTB_REPORT_LIMIT', undefined, { max: REPORTS_MAX });
    const now = isoTime(Date.now());
    const report: Report = {
      id: newId(),
      accountId: scope.accountId,
      name: checkName(input.name),
      description: input.description ?? null,
      columns: checkColumns(input.columns ?? []),
      retentionDays: input.retentionDays ?? DEFAULT_RETENTION_DAYS,
      ...this.#scheduled(input.schedule ?? null),
      lastSentAt: null,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.#store.insert(report))) throw new AppError('IOTB_REPORT_NAME_TAKEN', undefined, { name: report.name });
    this.#forget(scope.accountId, report.name);
    return report;
  }

  /** Changes name, description, retention; `columns` may only add to the end of the existing ones. */
  async update(scope: Scope, ref: string, change: Partial<ReportInput>): Promise<Report> {
    const before = await this.get(scope, ref);
    const columns = change.columns === undefined ? before.columns : checkColumns(change.columns);
    if (!before.columns.every((column, index) => columns[index]?.name === column.name)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'columns may only be added after the existing ones: entries already written keep their columns', { field: 'columns' });
    }
    const report: Report = {
      ...before,
      name: change.name === undefined ? before.name : checkName(change.name),
      description: change.description === undefined ? before.description : change.description,
      columns,
      retentionDays: change.retentionDays ?? before.retentionDays,
      ...(change.schedule === undefined ? {} : this.#scheduled(change.schedule)),
      updatedAt: isoTime(Date.now()),
    };
    if (report.name !== before.name && (await this.#store.findByName(scope.accountId, report.name))) throw new AppError('IOTB_REPORT_NAME_TAKEN', undefined, { name: report.name });
    await this.#store.update(report);
    this.#forget(scope.accountId, before.name);
    this.#forget(scope.accountId, report.name);
    return report;
  }

  async delete(scope: Scope, ref: string): Promise<void> {
    const report = await this.get(scope, ref);
    await this.#store.delete(scope.accountId, report.id);
    this.#forget(scope.accountId, report.name);
  }

  /**
   * Appends an entry (an object of column values; nested values are kept as JSON) to the report named `name`,
   * creating it on the first publish; new keys become columns at the end. `time` defaults to now.
   */
  async publish(scope: Scope, name: string, entry: unknown, time?: string): Promise<{ reportId: string; id: number; time: string }> {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new AppError('IOTB_REQUEST_VALIDATION', 'A report entry is an object of column values', { field: 'entry' });
    const data = entry as Record<string, unknown>;
    if (Buffer.byteLength(JSON.stringify(data)) > REPORT_ENTRY_MAX_BYTES) throw new AppError('IOTB_REQUEST_VALIDATION', `A report entry is at most ${REPORT_ENTRY_MAX_BYTES} bytes of JSON`, { field: 'entry' });
    const at = time === undefined ? Date.now() : timeMs(time);
    if (!Number.isFinite(at)) throw new AppError('IOTB_REQUEST_VALIDATION', 'time must be an ISO 8601 date-time', { field: 'time' });
    let report = (await this.#named(scope.accountId, name)) ?? (await this.#createOnPublish(scope, name));
    const added = Object.keys(data).filter((key) => !report.columns.some((column) => column.name === key));
    if (added.length > 0) {
      const columns = checkColumns([...report.columns, ...added.map((key) => ({ name: key, type: typeOf(data[key]) }))]);
      report = { ...report, columns, updatedAt: isoTime(Date.now()) };
      await this.#store.update(report);
      this.#byName.set(`${scope.accountId}\u0000${report.name}`, Promise.resolve(report));
    }
    const id = await this.#store.append(report, at, data);
    return { reportId: report.id, id, time: isoTime(at) };
  }

  async entries(scope: Scope, ref: string, query: Omit<EntryQuery, 'limit'> & { limit?: number | undefined }): Promise<EntryPage> {
    const report = await this.get(scope, ref);
    const limit = Math.min(Math.max(query.limit ?? 100, 1), ENTRIES_PAGE_MAX);
    const items = await this.#store.entries(report.id, { ...query, limit: limit + 1 });
    const page = items.slice(0, limit);
    return { items: page, next: items.length > limit ? page.at(-1)!.id : null };
  }

  /** Every entry in the range, page by page: for the CSV, which never holds more than a page. */
  async *allEntries(report: Report, range: { from?: number | undefined; to?: number | undefined }): AsyncGenerator<ReportEntry> {
    let after: number | undefined;
    for (;;) {
      const page = await this.#store.entries(report.id, { ...range, after, limit: ENTRIES_PAGE_MAX });
      yield* page;
      if (page.length < ENTRIES_PAGE_MAX) return;
      after = page.at(-1)!.id;
    }
  }

  countEntries(report: Report): Promise<number> {
    return this.#store.countEntries(report.id);
  }

  /** Reports whose scheduled mailing is due at `now` (every account's: the mailer's check). */
  dueSchedules(now: number, limit: number): Promise<Report[]> {
    return this.#store.dueSchedules(now, limit);
  }

  /** Takes a due mailing for this process: false when another check (or node) took it first. */
  async claimSchedule(report: Report, due: number, next: number, sentAt: number): Promise<boolean> {
    const claimed = await this.#store.claimSchedule(report.id, due, next, sentAt);
    this.#forget(report.accountId, report.name);
    return claimed;
  }

  /** Deletes entries past their report's retention (the retention job, hourly). */
  deleteExpired(now = Date.now()): Promise<number> {
    return this.#store.deleteExpired(now);
  }

  async #createOnPublish(scope: Scope, name: string): Promise<Report> {
    try {
      return await this.create(scope, { name });
    } catch (error) {
      // Two first publishes at once: the other one created it.
      if (error instanceof AppError && error.code === 'IOTB_REPORT_NAME_TAKEN') {
        this.#forget(scope.accountId, name);
        const found = await this.#named(scope.accountId, name);
        if (found) return found;
      }
      throw error;
    }
  }

  #named(accountId: string, name: string): Promise<Report | undefined> {
    const key = `${accountId}\u0000${name}`;
    let found = this.#byName.get(key);
    if (!found) {
      found = this.#store.findByName(accountId, name);
      found.catch(() => this.#byName.delete(key));
      this.#byName.set(key, found);
    }
    return found;
  }

  /** A schedule as stored, with when it mails next; refused when the service has no SMTP server. */
  #scheduled(input: ScheduleInput | null): Pick<Report, 'schedule' | 'nextSendAt'> {
    if (input === null) return { schedule: null, nextSendAt: null };
    if (!this.#mailConfigured) throw new AppError('IOTB_EMAIL_NOT_CONFIGURED', 'A report schedule mails the report: the service has no SMTP server (IOTBRIDGE_SMTP_URL)');
    const schedule = checkSchedule(input);
    return { schedule, nextSendAt: isoTime(nextBoundary(schedule, Date.now())) };
  }

  #forget(accountId: string, name: string): void {
    this.#byName.delete(`${accountId}\u0000${name}`);
  }
}

function checkName(name: string): string {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200) throw new AppError('IOTB_REQUEST_VALIDATION', 'A report name is 1 to 200 characters', { field: 'name' });
  return name;
}

function checkColumns(columns: readonly ReportColumn[]): ReportColumn[] {
  if (columns.length > REPORT_COLUMNS_MAX) throw new AppError('IOTB_REQUEST_VALIDATION', `A report has at most ${REPORT_COLUMNS_MAX} columns`, { field: 'columns' });
  const names = new Set<string>();
  for (const column of columns) {
    if (column.name === 'time') throw new AppError('IOTB_REQUEST_VALIDATION', 'The column "time" is the entry time: name the value another way', { field: 'columns' });
    if (names.has(column.name)) throw new AppError('IOTB_REQUEST_VALIDATION', `Column ${column.name} is named twice`, { field: 'columns' });
    names.add(column.name);
  }
  return columns.map((column) => ({ name: column.name, type: column.type }));
}

function typeOf(value: unknown): ColumnType {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string' || value === null || value === undefined) return 'string';
  return 'json';
}
