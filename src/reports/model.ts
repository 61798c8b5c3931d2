// Reports: named tables an account fills from triggers (docs/reports-alerts.md). Store implementation:
// src/store/report-store.ts (migration 0033).
import type { ReportSchedule } from './report-schedule.js';

/** What a column holds, inferred from the first value seen (or declared). */
export const COLUMN_TYPES = ['string', 'number', 'boolean', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export interface ReportColumn {
  readonly name: string;
  readonly type: ColumnType;
}

export interface Report {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly description: string | null;
  /** In the order they were declared or first seen: the CSV's columns after `time`. */
  readonly columns: ReportColumn[];
  /** Days entries are kept; 0 keeps them forever. */
  readonly retentionDays: number;
  /** Mailed as CSV at the end of every period; null: not mailed. */
  readonly schedule: ReportSchedule | null;
  /** When the schedule mails it next, and when it last did. */
  readonly nextSendAt: string | null;
  readonly lastSentAt: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ReportEntry {
  /** Increasing within the service: the order entries were published, and the `next` cursor. */
  readonly id: number;
  readonly time: string;
  readonly data: Record<string, unknown>;
}

export interface EntryQuery {
  /** Epoch ms, inclusive. */
  readonly from?: number | undefined;
  /** Epoch ms, exclusive. */
  readonly to?: number | undefined;
  /** Entries after this id (the previous page's `next`). */
  readonly after?: number | undefined;
  readonly limit: number;
}

export interface ReportStore {
  list(accountId: string): Promise<Report[]>;
  get(accountId: string, id: string): Promise<Report | undefined>;
  findByName(accountId: string, name: string): Promise<Report | undefined>;
  /** Inserts; false when the account has a report of that name already. */
  insert(report: Report): Promise<boolean>;
  update(report: Report): Promise<void>;
  /** Deletes the report and its entries. */
  delete(accountId: string, id: string): Promise<boolean>;
  append(report: Report, time: number, data: Record<string, unknown>): Promise<number>;
  /** Entries in publication order (`id`), within the time range. */
  entries(reportId: string, query: EntryQuery): Promise<ReportEntry[]>;
  countEntries(reportId: string): Promise<number>;
  /** Reports whose next mailing is due at `now` (epoch ms), across accounts. */
  dueSchedules(now: number, limit: number): Promise<Report[]>;
  /** Moves a due report's next mailing from `due` to `next` and records `sentAt`; false when another check did first. */
  claimSchedule(id: string, due: number, next: number, sentAt: number): Promise<boolean>;
  /** Deletes entries older than each report's retention; returns how many went. */
  deleteExpired(now: number): Promise<number>;
}
