// When a scheduled report is mailed and which entries it carries (docs/reports-alerts.md "Scheduled reports").
// Times are UTC: a schedule means the same instants on every node, whatever their time zone.
import { AppError } from '../errors.js';

export const SCHEDULE_PERIODS = ['hour', 'day', 'week', 'month'] as const;
export type SchedulePeriod = (typeof SCHEDULE_PERIODS)[number];

export interface ReportSchedule {
  readonly every: SchedulePeriod;
  /** `HH:MM` UTC when a day, week or month ends (default `00:00`); for `hour`, only the minutes count. */
  readonly at: string;
  /** ISO weekday a week ends on, 1 (Monday) to 7; for `week` only. */
  readonly weekday: number;
  readonly recipients: string[];
  /** The attachment starts with a UTF-8 BOM (spreadsheet programs). */
  readonly bom: boolean;
}

export interface ScheduleInput {
  readonly every: string;
  readonly at?: string | undefined;
  readonly weekday?: number | undefined;
  readonly recipients: readonly string[];
  readonly bom?: boolean | undefined;
}

const AT = /^([01]\d|2[0-3]):([0-5]\d)$/;
const EMAIL = /^[^@\s]+@[^@\s]+$/;

export function checkSchedule(input: ScheduleInput): ReportSchedule {
  if (!SCHEDULE_PERIODS.includes(input.every as SchedulePeriod)) throw invalid('schedule.every', `schedule.every is one of ${SCHEDULE_PERIODS.join(', ')}`);
  const at = input.at ?? '00:00';
  if (!AT.test(at)) throw invalid('schedule.at', 'schedule.at is HH:MM in UTC');
  const weekday = input.weekday ?? 1;
  if (!Number.isInteger(weekday) || weekday < 1 || weekday > 7) throw invalid('schedule.weekday', 'schedule.weekday is 1 (Monday) to 7 (Sunday)');
  const recipients = [...new Set(input.recipients)];
  if (recipients.length === 0 || recipients.length > 20 || !recipients.every((address) => EMAIL.test(address) && address.length <= 254)) {
    throw invalid('schedule.recipients', 'schedule.recipients is a list of 1 to 20 e-mail addresses');
  }
  return { every: input.every as SchedulePeriod, at, weekday, recipients, bom: input.bom ?? false };
}

/** The latest end of a period at or before `now` (epoch ms). */
export function latestBoundary(schedule: ReportSchedule, now: number): number {
  const [hours, minutes] = schedule.at.split(':').map(Number) as [number, number];
  const date = new Date(now);
  switch (schedule.every) {
    case 'hour': {
      date.setUTCMinutes(minutes, 0, 0);
      if (date.getTime() > now) date.setUTCHours(date.getUTCHours() - 1);
      return date.getTime();
    }
    case 'day': {
      date.setUTCHours(hours, minutes, 0, 0);
      if (date.getTime() > now) date.setUTCDate(date.getUTCDate() - 1);
      return date.getTime();
    }
    case 'week': {
      date.setUTCHours(hours, minutes, 0, 0);
      const isoDay = date.getUTCDay() === 0 ? 7 : date.getUTCDay();
      date.setUTCDate(date.getUTCDate() - ((isoDay - schedule.weekday + 7) % 7));
      if (date.getTime() > now) date.setUTCDate(date.getUTCDate() - 7);
      return date.getTime();
    }
    case 'month': {
      date.setUTCDate(1);
      date.setUTCHours(hours, minutes, 0, 0);
      if (date.getTime() > now) date.setUTCMonth(date.getUTCMonth() - 1);
      return date.getTime();
    }
  }
}

/** The period before a boundary: [start, boundary). */
export function periodBefore(schedule: ReportSchedule, boundary: number): { from: number; to: number } {
  return { from: shifted(schedule, boundary, -1), to: boundary };
}

/** The first end of a period after `now`: when the report is mailed next. */
export function nextBoundary(schedule: ReportSchedule, now: number): number {
  return shifted(schedule, latestBoundary(schedule, now), 1);
}

/** A boundary moved by whole periods (UTC has no daylight saving: a day is always 24 hours). */
function shifted(schedule: ReportSchedule, boundary: number, periods: number): number {
  const date = new Date(boundary);
  switch (schedule.every) {
    case 'hour':
      date.setUTCHours(date.getUTCHours() + periods);
      break;
    case 'day':
      date.setUTCDate(date.getUTCDate() + periods);
      break;
    case 'week':
      date.setUTCDate(date.getUTCDate() + 7 * periods);
      break;
    case 'month':
      date.setUTCMonth(date.getUTCMonth() + periods);
      break;
  }
  return date.getTime();
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
