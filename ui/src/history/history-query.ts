import { href } from '../router/hash-location';

/** Events per page of the history. */
export const HISTORY_PAGE_SIZE = 25;

/** The history's filter and page as the fragment's query carries them (`#/history?type=a&endpoint=k.x&next=…`). */
export interface HistoryQuery {
  readonly types: readonly string[];
  /** As the API takes it: an endpoint id or `k.<key>`. */
  readonly endpoint: string;
  readonly serviceId: string;
  /** ISO times, inclusive. */
  readonly from: string;
  readonly to: string;
  /** The API's cursor of this page; '' for the newest events. */
  readonly next: string;
}

export function readHistoryQuery(query: URLSearchParams): HistoryQuery {
  return {
    types: query.getAll('type').filter((type) => type !== ''),
    endpoint: query.get('endpoint') ?? '',
    serviceId: query.get('serviceId') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
    next: query.get('next') ?? '',
  };
}

export function historyHref(query: Partial<HistoryQuery>): string {
  return href('/history', { type: query.types, endpoint: query.endpoint, serviceId: query.serviceId, from: query.from, to: query.to, next: query.next });
}

/** An endpoint as typed in the filter: `k.<key>` and ids (16 URL-safe characters) as they are, anything else as a key. */
export function endpointRef(text: string): string {
  const value = text.trim();
  if (value === '' || value.startsWith('k.') || /^[A-Za-z0-9_-]{16}$/.test(value)) return value;
  return `k.${value}`;
}

/** "reading, alarm status" → ["reading", "alarm", "status"]. */
export function splitTypes(text: string): string[] {
  return text.split(/[\s,]+/).filter((type) => type !== '');
}

/** An ISO time as a `datetime-local` field shows it (the browser's time zone, to the second). */
export function toLocalInput(iso: string): string {
  const date = new Date(iso);
  if (iso === '' || Number.isNaN(date.getTime())) return '';
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 19);
}

/** A `datetime-local` value as an ISO time ('' stays ''). */
export function fromLocalInput(value: string): string {
  if (value === '') return '';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? '' : date.toISOString();
}
