import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import type { Report } from './model.js';
import { csvHeader, csvLine } from './report-csv.js';
import { latestBoundary, nextBoundary, periodBefore } from './report-schedule.js';
import type { Reports } from './reports.js';

/** The largest CSV a mail carries; a bigger period is cut there and the mail says so. */
export const ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;

export interface ReportMail {
  readonly to: string[];
  readonly subject: string;
  readonly text: string;
  readonly attachments: Array<{ filename: string; content: string; contentType: string }>;
}

export interface ReportMailerOptions {
  readonly reports: Reports;
  /** The service's SMTP server; undefined without one (schedules are refused then). */
  readonly send: ((mail: ReportMail) => Promise<void>) | undefined;
  readonly checkIntervalMs: number;
  /** Told what went wrong (the service logs it). */
  readonly onFailure: (what: string, error: unknown) => void;
}

/**
 * Mails reports as CSV: on their schedule (every check finds the due ones by an index; a report whose mailing was
 * missed while the service was down gets its latest full period once, not every missed one) and on request
 * (`POST /reports/{ref}/mail`). A due mailing is claimed in the store before it is sent, so two nodes never both
 * send it; a failed send is logged and not retried until the next period.
 */
export class ReportMailer {
  readonly #options: ReportMailerOptions;
  #timer: NodeJS.Timeout | undefined;
  #check: Promise<void> | undefined;

  constructor(options: ReportMailerOptions) {
    this.#options = options;
  }

  start(): void {
    if (!this.#options.send) return;
    this.#timer ??= setInterval(() => {
      this.#check ??= this.check().finally(() => (this.#check = undefined));
    }, this.#options.checkIntervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#check;
  }

  /** Sends every report that is due now. */
  async check(now = Date.now()): Promise<void> {
    for (;;) {
      let due: Report[];
      try {
        due = await this.#options.reports.dueSchedules(now, 100);
      } catch (error) {
        this.#options.onFailure('scheduled reports (reading the due ones)', error);
        return;
      }
      for (const report of due) await this.#sendDue(report, now);
      if (due.length < 100) return;
    }
  }

  /** Mails the entries of a period (default: the schedule's last full period, or the last 24 hours) now. */
  async mailNow(scope: Scope, ref: string, request: { recipients?: readonly string[] | undefined; from?: number | undefined; to?: number | undefined }): Promise<{ recipients: string[]; from: string; to: string; rows: number; truncated: boolean }> {
    if (!this.#options.send) throw new AppError('IOTB_EMAIL_NOT_CONFIGURED');
    const report = await this.#options.reports.get(scope, ref);
    const recipients = [...(request.recipients ?? report.schedule?.recipients ?? [])];
    if (recipients.length === 0) throw new AppError('IOTB_REQUEST_VALIDATION', 'Name the recipients: the report has no schedule to take them from', { field: 'recipients' });
    const now = Date.now();
    const period = report.schedule ? periodBefore(report.schedule, latestBoundary(report.schedule, now)) : { from: now - 86_400_000, to: now };
    const range = { from: request.from ?? period.from, to: request.to ?? period.to };
    if (range.from >= range.to) throw new AppError('IOTB_REQUEST_VALIDATION', '"from" is not before "to"', { field: 'from' });
    const sent = await this.#send(report, recipients, range);
    return { recipients, from: isoTime(range.from), to: isoTime(range.to), ...sent };
  }

  async #sendDue(report: Report, now: number): Promise<void> {
    const schedule = report.schedule;
    const due = report.nextSendAt === null ? undefined : Date.parse(report.nextSendAt);
    if (!schedule || due === undefined) return;
    try {
      if (!(await this.#options.reports.claimSchedule(report, due, nextBoundary(schedule, now), now))) return;
      await this.#send(report, schedule.recipients, periodBefore(schedule, latestBoundary(schedule, now)));
    } catch (error) {
      this.#options.onFailure(`scheduled report ${report.id} of account ${report.accountId}`, error);
    }
  }

  async #send(report: Report, recipients: string[], range: { from: number; to: number }): Promise<{ rows: number; truncated: boolean }> {
    const csv = await this.#csv(report, range, report.schedule?.bom ?? false);
    const period = `${isoTime(range.from)} to ${isoTime(range.to)}`;
    await this.#options.send!({
      to: recipients,
      subject: `Report ${report.name}: ${period}`,
      text:
        `${csv.rows} entr${csv.rows === 1 ? 'y' : 'ies'} of report "${report.name}" from ${period} (UTC), attached as CSV.` +
        (csv.truncated ? `\nThe period holds more than ${ATTACHMENT_MAX_BYTES / 1024 / 1024} MiB of CSV: the attachment stops there. GET /report/details/csv gives all of it.` : ''),
      attachments: [{ filename: `${fileName(report.name)}-${isoTime(range.from).slice(0, 10)}.csv`, content: csv.text, contentType: 'text/csv; charset=utf-8' }],
    });
    return { rows: csv.rows, truncated: csv.truncated };
  }

  /** The CSV of the period, read page by page and cut at ATTACHMENT_MAX_BYTES (whole rows only). */
  async #csv(report: Report, range: { from: number; to: number }, bom: boolean): Promise<{ text: string; rows: number; truncated: boolean }> {
    const lines = [csvHeader(report, bom)];
    let bytes = lines[0]!.length;
    for await (const entry of this.#options.reports.allEntries(report, range)) {
      const line = csvLine(report, entry);
      if (bytes + line.length > ATTACHMENT_MAX_BYTES) return { text: lines.join(''), rows: lines.length - 1, truncated: true };
      lines.push(line);
      bytes += line.length;
    }
    return { text: lines.join(''), rows: lines.length - 1, truncated: false };
  }
}

function fileName(name: string): string {
  return name.replace(/[^\w.-]+/g, '-').slice(0, 100) || 'report';
}
