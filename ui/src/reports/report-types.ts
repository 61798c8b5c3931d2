// The reports' types, all from the generated API types (schema.d.ts), and the small formatting the pages share.
import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

/** A report as `GET /reports/{ref}` answers it (`entries` is its count there, absent in the list). */
export type Report = ApiData<'/reports/{ref}'>;
export type ReportColumn = Report['columns'][number];
/** One page of `GET /reports/{ref}/entries`: `next` is the cursor of the following page, null after the last. */
export type EntryPage = ApiData<'/reports/{ref}/entries'>;
export type ReportEntry = EntryPage['items'][number];
/** The body of `POST /reports`. */
export type NewReport = paths['/reports']['post']['requestBody']['content']['application/json'];
/** The body of `PATCH /reports/{ref}`. */
export type ReportPatch = paths['/reports/{ref}']['patch']['requestBody']['content']['application/json'];

const COUNT = new Intl.NumberFormat('en');

/** 90 → "90 days", 1 → "1 day", 0 → "forever" (the API keeps entries forever at 0). */
export function retentionText(days: number): string {
  if (days === 0) return 'forever';
  return `${COUNT.format(days)} ${days === 1 ? 'day' : 'days'}`;
}

/** An entry's value as its cell shows it: text as it is, anything else as compact JSON, nothing as ''. */
export function cellText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `<name>.csv`, with what no file name may hold (path separators, `:*?"<>|`, control characters) as `_`. */
export function csvFileName(name: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is replaced
  const safe = name.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, '_').trim();
  return `${safe === '' ? 'report' : safe}.csv`;
}
