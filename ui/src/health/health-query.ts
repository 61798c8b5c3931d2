import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';
import { href } from '../router/hash-location';
import { EXECUTIONS_PATH } from '../router/routes';

/** Objects the status table shows at most (the API's default). */
export const STATUS_LIMIT = 100;

export type StatusItem = ApiData<'/metrics/status'>['items'][number];
export type StatusObject = StatusItem['object'];
export type StatusSort = NonNullable<NonNullable<paths['/metrics/status']['get']['parameters']['query']>['sort']>;
export type FieldCensus = ApiData<'/metrics/fields'>;

export const OBJECT_CHOICES: readonly { readonly value: StatusObject; readonly label: string }[] = [
  { value: 'trigger', label: 'Triggers' },
  { value: 'endpoint', label: 'Endpoints' },
  { value: 'service', label: 'Services' },
];

export const SORT_CHOICES: readonly { readonly value: StatusSort; readonly label: string }[] = [
  { value: '-errors', label: 'Most errors first' },
  { value: 'errors', label: 'Fewest errors first' },
  { value: '-lastActivity', label: 'Latest activity first' },
  { value: 'lastActivity', label: 'Oldest activity first' },
  { value: 'name', label: 'Name' },
];

/** The health page's view as the fragment's query carries it (`#/health?object=trigger&sort=name`). */
export interface HealthQuery {
  /** One kind of object, or '' for all. */
  readonly object: StatusObject | '';
  readonly sort: StatusSort;
}

export function readHealthQuery(search: URLSearchParams): HealthQuery {
  const object = search.get('object') ?? '';
  const sort = search.get('sort') ?? '';
  return {
    object: OBJECT_CHOICES.find((choice) => choice.value === object)?.value ?? '',
    sort: SORT_CHOICES.find((choice) => choice.value === sort)?.value ?? '-errors',
  };
}

/** The link to the page with this view; the default sort is left out. */
export function healthHref(query: HealthQuery): string {
  return href('/health', { object: query.object, sort: query.sort === '-errors' ? undefined : query.sort });
}

/** A column header's sort: a first click sorts the way most wanted (errors and activity: most / newest first), a second turns it round. */
export function headerSort(column: 'name' | 'lastActivity' | 'errors', current: StatusSort): StatusSort {
  if (column === 'name') return 'name';
  return current === `-${column}` ? column : `-${column}`;
}

/** Where an object's errors are listed: an endpoint's in the log, a trigger's failed runs; a service's are its endpoints'. */
export function errorsHref(item: StatusItem): string | undefined {
  if (item.object === 'endpoint') return href('/logs', { endpoint: item.id, level: 'error' });
  if (item.object === 'trigger') return href(EXECUTIONS_PATH, { triggerId: item.id, status: 'failed' });
  return undefined;
}
