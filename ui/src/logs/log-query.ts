import type { ApiData } from '../api/client';
import { href } from '../router/hash-location';

/** Entries per page of the log. */
export const LOG_PAGE_SIZE = 50;

export type LogPage = ApiData<'/log'>;
export type LogEntry = LogPage['items'][number];
export type LogLevel = LogEntry['level'];

/** The levels a filter offers: each means that level and the more severe ones, as the API reads it. */
export const LEVEL_CHOICES: readonly { readonly value: LogLevel; readonly label: string }[] = [
  { value: 'error', label: 'Errors' },
  { value: 'warn', label: 'Warnings and errors' },
  { value: 'info', label: 'Info and above' },
];

/** The sources that write entries today (`alert` is reserved by the API and writes none yet). */
export const SOURCES = ['script', 'api', 'device', 'audit'] as const;
export type LogSource = (typeof SOURCES)[number];

/** The log's filter and page as the fragment's query carries them (`#/logs?level=warn&source=api&next=…`). */
export interface LogQuery {
  readonly level: LogLevel | '';
  readonly sources: readonly LogSource[];
  readonly text: string;
  /** As the API takes it: an endpoint id or `k.<key>`. */
  readonly endpoint: string;
  /** A trigger id. */
  readonly trigger: string;
  /** ISO times: from inclusive, to exclusive. */
  readonly from: string;
  readonly to: string;
  /** The API's cursor of this page; '' for the newest entries. */
  readonly next: string;
  /** Milliseconds the API may search (its default when ''): only from the URL, for a slow search over a large log. */
  readonly timeout: string;
}

const LEVELS: readonly string[] = ['error', 'warn', 'info', 'debug'];

function isLevel(value: string): value is LogLevel {
  return LEVELS.includes(value);
}

function isSource(value: string): value is LogSource {
  return (SOURCES as readonly string[]).includes(value);
}

/** Reads the query; values the API would refuse (an unknown level, a malformed cursor) are left out. */
export function readLogQuery(search: URLSearchParams): LogQuery {
  const level = search.get('level') ?? '';
  const next = search.get('next') ?? '';
  const timeout = search.get('timeout') ?? '';
  const timeoutMs = Number(timeout);
  return {
    level: isLevel(level) ? level : '',
    sources: [...new Set(search.getAll('source').filter(isSource))],
    text: (search.get('text') ?? '').slice(0, 200),
    endpoint: search.get('endpoint') ?? '',
    trigger: search.get('trigger') ?? '',
    from: search.get('from') ?? '',
    to: search.get('to') ?? '',
    next: /^\d+\.\d+$/.test(next) ? next : '',
    timeout: /^\d+$/.test(timeout) && timeoutMs >= 1 && timeoutMs <= 60_000 ? timeout : '',
  };
}

export function logsHref(query: Partial<LogQuery>): string {
  return href('/logs', {
    level: query.level,
    source: query.sources,
    text: query.text,
    endpoint: query.endpoint,
    trigger: query.trigger,
    from: query.from,
    to: query.to,
    timeout: query.timeout,
    next: query.next,
  });
}

/** Whether the query narrows the log (a page or a time budget alone does not). */
export function isFiltered(query: LogQuery): boolean {
  return query.level !== '' || query.sources.length > 0 || query.text !== '' || query.endpoint !== '' || query.trigger !== '' || query.from !== '' || query.to !== '';
}

/** The filters as `GET /log` and `GET /log/csv` take them; empty ones left out. */
export function apiFilters(query: LogQuery) {
  const optional = (value: string) => (value === '' ? undefined : value);
  return {
    level: query.level === '' ? undefined : query.level,
    source: query.sources.length === 0 ? undefined : [...query.sources],
    text: optional(query.text),
    endpoint: optional(query.endpoint),
    trigger: optional(query.trigger),
    from: optional(query.from),
    to: optional(query.to),
  };
}

/** What the page says under its table, read from the answer alone. */
export type LogOutcome =
  /** The time ran out: the entries found so far, how far back the search looked, and where to go on. */
  | { readonly kind: 'partial'; readonly reached: string | null; readonly next: string }
  /** A full page: older entries may follow. */
  | { readonly kind: 'more'; readonly next: string }
  /** Every matching entry in the range was looked at. */
  | { readonly kind: 'end' };

export function logOutcome(page: Pick<LogPage, 'partial' | 'searchedTo' | 'next'>): LogOutcome {
  if (page.next === null) return { kind: 'end' };
  return page.partial ? { kind: 'partial', reached: page.searchedTo, next: page.next } : { kind: 'more', next: page.next };
}
