import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import type { Scope } from '../domain/scope.js';
import type { Logs } from './logs.js';
import type { LogFilter } from './model.js';

export const LOG_CSV_COLUMNS = ['time', 'level', 'source', 'endpointKey', 'triggerId', 'message'] as const;

/**
 * The account's entries matching `filter` as CSV (RFC 4180 quoting by csv-stringify), newest first: a header
 * row, then one row per entry. Streams a step of the log at a time with back-pressure, so a log of any size
 * is never held in memory. `bom` starts the text with a UTF-8 BOM for spreadsheet programs.
 */
export function logCsv(logs: Logs, scope: Scope, filter: LogFilter, options: { limit?: number | undefined; bom: boolean }): Readable {
  const rows = async function* (): AsyncGenerator<string[]> {
    for await (const entry of logs.entries(scope, filter, options.limit)) {
      yield [entry.time, entry.level, entry.source, entry.endpointKey ?? '', entry.triggerId ?? '', entry.message];
    }
  };
  const csv = stringify({ header: true, columns: [...LOG_CSV_COLUMNS], bom: options.bom });
  // pipe() does not pass errors on: a failed read ends the response instead of leaving it open.
  return Readable.from(rows())
    .on('error', (error) => csv.destroy(error))
    .pipe(csv);
}
