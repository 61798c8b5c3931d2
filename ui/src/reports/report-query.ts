import { href } from '../router/hash-location';
import { reportPath } from '../router/routes';

/** Entries per page of a report. */
export const ENTRIES_PAGE_SIZE = 20;

/** A report page's time range and page as the fragment's query carries them (`#/reports/<id>?from=…&to=…&next=…`). */
export interface EntryQuery {
  /** ISO times: from inclusive, to exclusive (as the API takes them); '' for open. */
  readonly from: string;
  readonly to: string;
  /** The API's cursor of this page; '' for the first. */
  readonly next: string;
}

export function readEntryQuery(search: URLSearchParams): EntryQuery {
  const next = search.get('next') ?? '';
  return { from: search.get('from') ?? '', to: search.get('to') ?? '', next: /^\d+$/.test(next) ? next : '' };
}

/** The link to a report's page with this range and page; empty values are left out. */
export function reportHref(id: string, query: Partial<EntryQuery> = {}): string {
  return href(reportPath(id), { from: query.from, to: query.to, next: query.next });
}
