import { ScriptArgumentError } from '../namespace.js';
import type { LocalNamespace } from './local.js';

interface Parts {
  YYYY: string;
  MM: string;
  DD: string;
  HH: string;
  mm: string;
  ss: string;
  SSS: string;
  Z: string;
}

function zone(value: unknown): string {
  if (value === undefined || value === null) return 'UTC';
  if (typeof value !== 'string') throw new ScriptArgumentError('timezone must be an IANA name such as "Europe/Berlin"');
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
  } catch {
    throw new ScriptArgumentError(`unknown timezone "${value}"`);
  }
  return value;
}

function instant(value: unknown): Date {
  const date = value === undefined || value === null ? new Date() : new Date(value as string | number);
  if (Number.isNaN(date.getTime())) throw new ScriptArgumentError('date must be an ISO string or epoch milliseconds');
  return date;
}

/** The wall-clock fields of `date` in `timeZone`, and its offset from UTC as +HH:MM. */
function parts(date: Date, timeZone: string): Parts {
  const formatted = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  ) as Record<string, string>;
  const local = Date.UTC(Number(formatted.year), Number(formatted.month) - 1, Number(formatted.day), Number(formatted.hour), Number(formatted.minute), Number(formatted.second));
  const offsetMinutes = Math.round((local - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return {
    YYYY: formatted.year!,
    MM: formatted.month!,
    DD: formatted.day!,
    HH: formatted.hour!,
    mm: formatted.minute!,
    ss: formatted.second!,
    SSS: String(date.getUTCMilliseconds()).padStart(3, '0'),
    Z: `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`,
  };
}

const TOKENS = /YYYY|MM|DD|HH|mm|ss|SSS|Z/g;

function format(date: Date, pattern: string, timeZone: string): string {
  const p = parts(date, timeZone);
  return pattern.replace(TOKENS, (token) => p[token as keyof Parts]);
}

/** `date.*`: time in a timezone (IANA names; default UTC). */
export const date: LocalNamespace = {
  /** date.now(timezone?) → the current time as ISO 8601 with the zone's offset, e.g. "2026-11-22T10:05:00.000+01:00". */
  now: ([timeZone]) => format(new Date(), 'YYYY-MM-DDTHH:mm:ss.SSSZ', zone(timeZone)),
  /** date.format(date, pattern?, timezone?) with tokens YYYY MM DD HH mm ss SSS Z; default pattern ISO 8601. */
  format: ([value, pattern, timeZone]) => {
    if (pattern !== undefined && pattern !== null && typeof pattern !== 'string') throw new ScriptArgumentError('pattern must be a string');
    return format(instant(value), (pattern) ?? 'YYYY-MM-DDTHH:mm:ss.SSSZ', zone(timeZone));
  },
};
