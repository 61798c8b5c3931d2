import { href } from '../router/hash-location';
import { ALERT_STATES, SEVERITIES, type AlertState, type Severity } from './alert-types';

/** Alerts per page of the list. */
export const ALERTS_PAGE_SIZE = 25;

/** The state filter: '' (the default) is the active ones, open before acknowledged; `all` includes the closed. */
export type StateFilter = '' | AlertState | 'all';

/** The list's filter and page as the fragment's query carries them (`#/alerts?state=closed&severity=major&tag=x&offset=25`). */
export interface AlertQuery {
  readonly state: StateFilter;
  readonly severity: Severity | '';
  readonly tags: readonly string[];
  /** As the API takes it: an endpoint id or `k.<key>`. */
  readonly endpoint: string;
  readonly ruleId: string;
  readonly offset: number;
}

function readState(value: string | null): StateFilter {
  if (value === 'all') return 'all';
  return ALERT_STATES.find((state) => state === value) ?? '';
}

export function readAlertQuery(search: URLSearchParams): AlertQuery {
  const offset = Number(search.get('offset') ?? 0);
  return {
    state: readState(search.get('state')),
    severity: SEVERITIES.find((severity) => severity === search.get('severity')) ?? '',
    tags: search.getAll('tag').filter((tag) => tag !== ''),
    endpoint: search.get('endpoint') ?? '',
    ruleId: search.get('ruleId') ?? '',
    offset: Number.isInteger(offset) && offset > 0 ? offset : 0,
  };
}

export function alertsHref(query: Partial<AlertQuery>): string {
  return href('/alerts', {
    state: query.state,
    severity: query.severity,
    tag: query.tags,
    endpoint: query.endpoint,
    ruleId: query.ruleId,
    offset: query.offset === 0 ? undefined : query.offset,
  });
}

/** Something other than the default view is asked for. */
export function isFiltered(query: AlertQuery): boolean {
  return query.state !== '' || query.severity !== '' || query.tags.length > 0 || query.endpoint !== '' || query.ruleId !== '';
}
