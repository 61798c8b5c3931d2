import type { paths } from '../api/schema';
import { href } from '../router/hash-location';

/** Endpoints per page of the list. */
export const ENDPOINTS_PAGE_SIZE = 25;

/** The states the list filters by (`GET /endpoints?state=`); '' is any state. */
export type EndpointStateFilter = NonNullable<NonNullable<paths['/endpoints']['get']['parameters']['query']>['state']> | '';

export const ENDPOINT_STATES: readonly Exclude<EndpointStateFilter, ''>[] = ['connected', 'unavailable'];

/** The list's filter and page, as the fragment's query carries them (`#/endpoints?keyPrefix=a&tag=x&state=connected&offset=25`). */
export interface EndpointQuery {
  readonly keyPrefix: string;
  readonly tags: readonly string[];
  readonly serviceId: string;
  readonly state: EndpointStateFilter;
  readonly offset: number;
}

function readState(value: string | null): EndpointStateFilter {
  return ENDPOINT_STATES.find((state) => state === value) ?? '';
}

export function readEndpointQuery(query: URLSearchParams): EndpointQuery {
  const offset = Number(query.get('offset') ?? 0);
  return {
    keyPrefix: query.get('keyPrefix') ?? '',
    tags: query.getAll('tag').filter((tag) => tag !== ''),
    serviceId: query.get('serviceId') ?? '',
    state: readState(query.get('state')),
    offset: Number.isInteger(offset) && offset > 0 ? offset : 0,
  };
}

export function endpointsHref(query: Partial<EndpointQuery>): string {
  return href('/endpoints', {
    keyPrefix: query.keyPrefix,
    tag: query.tags,
    serviceId: query.serviceId,
    state: query.state,
    offset: query.offset === 0 ? undefined : query.offset,
  });
}

/** The filter as the query of `GET /endpoints`, `GET /endpoint/count` (and, without `state`, `PATCH /endpoints`). */
export function endpointFilterParams(query: EndpointQuery) {
  return {
    keyPrefix: query.keyPrefix === '' ? undefined : query.keyPrefix,
    tag: query.tags.length === 0 ? undefined : [...query.tags],
    serviceId: query.serviceId === '' ? undefined : query.serviceId,
    state: query.state === '' ? undefined : query.state,
  };
}

/** "site:berlin, floor:2 lab" → ["site:berlin", "floor:2", "lab"]: tags are separated by commas or spaces. */
export function splitTags(text: string): string[] {
  return text.split(/[\s,]+/).filter((tag) => tag !== '');
}
