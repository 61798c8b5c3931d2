import { Fragment, useCallback, useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { fromLocalInput, toLocalInput } from '../history/history-query';
import { navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { CsvDownload } from './csv-download';
import { ENTRIES_PAGE_SIZE, reportHref, type EntryQuery } from './report-query';
import { cellText, type Report, type ReportColumn, type ReportEntry } from './report-types';

/** Characters a value may have and stay on one line. */
const SHORT_CELL = 16;
/** Characters of a value a cell shows. */
const LONG_CELL = 200;

/**
 * The report's entries in publication order, a page at a time (`GET /reports/{ref}/entries`; **Next page**
 * follows the answer's `next` cursor, **First page** starts over), within the time range of the URL.
 */
export function ReportEntries({ report, query }: { readonly report: Report; readonly query: EntryQuery }) {
  const { api } = useSession();
  const { from, to, next } = query;
  const load = useCallback(() => {
    const optional = (value: string) => (value === '' ? undefined : value);
    return call(
      api.GET('/reports/{ref}/entries', {
        params: { path: { ref: report.id }, query: { limit: ENTRIES_PAGE_SIZE, from: optional(from), to: optional(to), next: next === '' ? undefined : Number(next) } },
      }),
    );
  }, [api, report.id, from, to, next]);
  const entries = useResource(load);
  const ranged = from !== '' || to !== '';

  return (
    <div className="rep-entries">
      <h2 id="report-entries-title">Entries</h2>
      {/* A new range in the URL (a link, back/forward) starts the fields afresh; a new page keeps them. */}
      <RangeForm key={`${from} ${to}`} report={report} query={query} />
      <CsvDownload report={report} query={query} />
      <ErrorMessage message={entries.error} />
      {entries.data === undefined ? (
        entries.error === undefined ? <Loading what="entries" /> : null
      ) : (
        <div aria-busy={entries.loading}>
          <nav className="pager" aria-label="Pages of entries">
            <span className="pager-range" aria-live="polite">
              {pageText(entries.data.items.length, next === '', ranged ? undefined : report.entries)}
            </span>
            <span className="pager-links">
              {next === '' ? (
                <span className="button button-quiet" aria-disabled="true">
                  First page
                </span>
              ) : (
                <a className="button button-quiet" href={reportHref(report.id, { from, to })}>
                  First page
                </a>
              )}
              {entries.data.next === null ? (
                <span className="button button-quiet" aria-disabled="true">
                  Next page
                </span>
              ) : (
                <a className="button button-quiet" href={reportHref(report.id, { from, to, next: String(entries.data.next) })} rel="next">
                  Next page
                </a>
              )}
            </span>
          </nav>
          {entries.data.items.length === 0 ? (
            <p className="muted">{ranged ? 'No entry in this time range.' : 'No entries yet.'}</p>
          ) : (
            <EntryTable columns={report.columns} entries={entries.data.items} />
          )}
        </div>
      )}
    </div>
  );
}

/** "20 entries from the first (25 in all)", "5 entries further on (25 in all)"; the total only without a range. */
function pageText(count: number, first: boolean, total: number | undefined): string {
  if (count === 0) return first ? 'No entries' : 'No more entries';
  const noun = count === 1 ? 'entry' : 'entries';
  return `${count} ${noun} ${first ? 'from the first' : 'further on'}${total === undefined ? '' : ` (${total.toLocaleString('en')} in all)`}`;
}

/** From (inclusive) and to (exclusive) in the browser's time zone; applying it goes to the first page of the range. */
function RangeForm({ report, query }: { readonly report: Report; readonly query: EntryQuery }) {
  const id = useId();
  const [from, setFrom] = useState(toLocalInput(query.from));
  const [to, setTo] = useState(toLocalInput(query.to));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(reportHref(report.id, { from: fromLocalInput(from), to: fromLocalInput(to) }));
  };
  return (
    <form className="filter-form" role="search" aria-label="Time range" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-from`}>From</label>
        <input id={`${id}-from`} type="datetime-local" step={1} value={from} onChange={(event) => setFrom(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-to`}>To (not included)</label>
        <input id={`${id}-to`} type="datetime-local" step={1} value={to} onChange={(event) => setTo(event.target.value)} />
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Show
        </button>
        {query.from !== '' || query.to !== '' ? (
          <a className="button button-quiet" href={reportHref(report.id)}>
            All times
          </a>
        ) : null}
      </div>
    </form>
  );
}

/** Time, then one column per report column in its order: text as it is, other values as compact JSON. */
function EntryTable({ columns, entries }: { readonly columns: readonly ReportColumn[]; readonly entries: readonly ReportEntry[] }) {
  return (
    <div className="table-scroll">
      <table className="table table-compact rep-entry-table" aria-labelledby="report-entries-title">
        <thead>
          <tr>
            <th scope="col">Time</th>
            {columns.map((column) => (
              <th key={column.name} scope="col" title={column.type}>
                {column.name}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id}>
              <td className="nowrap">
                <DateTime value={entry.time} />
              </td>
              {columns.map((column) => (
                <Cell key={column.name} value={entry.data[column.name]} />
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * One value: text as it is, anything else as compact JSON in monospace, which may break after its commas (and
 * nowhere inside a number). A value longer than a cell shows its start; the tooltip and the CSV have all of it.
 */
function Cell({ value }: { readonly value: unknown }) {
  const text = cellText(value);
  const json = typeof value !== 'string';
  const shown = text.length > LONG_CELL ? `${text.slice(0, LONG_CELL)}…` : text;
  const className = ['rep-cell', json ? 'mono' : '', text.length <= SHORT_CELL ? 'rep-cell-short' : ''].filter((name) => name !== '').join(' ');
  const parts = json ? shown.split(/(?<=,)/) : [shown];
  return (
    <td className={className} title={shown === text ? undefined : text}>
      {parts.map((part, index) => (
        // The parts of one value never move, so their place is their key.
        <Fragment key={index}>
          {index === 0 ? null : <wbr />}
          {part}
        </Fragment>
      ))}
    </td>
  );
}
