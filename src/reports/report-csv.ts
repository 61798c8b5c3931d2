import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import { stringify as stringifySync } from 'csv-stringify/sync';
import type { Report, ReportEntry } from './model.js';
import type { Reports } from './reports.js';

/** A value as a CSV cell: text as it is, numbers and booleans as JSON writes them, objects as JSON, nothing as empty. */
function cell(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/**
 * The report's entries in the range as CSV (RFC 4180 quoting by csv-stringify): a header row `time` and the
 * report's columns in their order, then one row per entry in publication order. Streams page by page with
 * back-pressure, so a report of any size is never held in memory. `bom` starts the text with a UTF-8 BOM,
 * which spreadsheet programs need to read it as UTF-8.
 */
export function reportCsv(reports: Reports, report: Report, range: { from?: number | undefined; to?: number | undefined }, options: { bom: boolean }): Readable {
  const columns = report.columns.map((column) => column.name);
  const rows = async function* (): AsyncGenerator<string[]> {
    for await (const entry of reports.allEntries(report, range)) yield row(entry, columns);
  };
  return Readable.from(rows()).pipe(stringify({ header: true, columns: ['time', ...columns], bom: options.bom }));
}

/** The CSV's header line (with the BOM when asked), then one line per entry: for a mail that stops at a size. */
export function csvHeader(report: Report, bom: boolean): string {
  return (bom ? '\ufeff' : '') + stringifySync([['time', ...report.columns.map((column) => column.name)]]);
}

export function csvLine(report: Report, entry: ReportEntry): string {
  return stringifySync([row(entry, report.columns.map((column) => column.name))]);
}

function row(entry: ReportEntry, columns: readonly string[]): string[] {
  return [entry.time, ...columns.map((name) => cell(entry.data[name]))];
}
