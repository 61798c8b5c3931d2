import { parseTag, type Endpoint } from '../domain/endpoints.js';
import type { Event } from '../events/event.js';

/** SPEC "Trigger custom filters", plus `==`. All filters of a trigger must hold for it to run. */
export const FILTER_TYPES = [
  'has-tag',
  'missing-tag',
  'has-status-detail',
  'missing-status-detail',
  'has-endpoint',
  'one-of',
  'contains',
  '==',
  '!=',
  '>',
  '>=',
  '<=',
  '<',
] as const;
export type FilterType = (typeof FILTER_TYPES)[number];

export interface TriggerFilter {
  readonly type: FilterType;
  /** Dotted path into the event (`data.temperature`, `endpointKey`, `type`) for the field filters. */
  readonly field?: string | undefined;
  /** Tag (`name` or `name:value`), status detail name, endpoint key, or the value compared with. */
  readonly value?: unknown;
  /** For `one-of`. */
  readonly values?: unknown[] | undefined;
}

/** True when some filter needs the event's endpoint (tags, status details). */
export function needsEndpoint(filters: readonly TriggerFilter[]): boolean {
  return filters.some((f) => f.type === 'has-tag' || f.type === 'missing-tag' || f.type === 'has-status-detail' || f.type === 'missing-status-detail');
}

export function matches(filters: readonly TriggerFilter[], event: Event, endpoint: Endpoint | undefined): boolean {
  return filters.every((filter) => matchesOne(filter, event, endpoint));
}

function matchesOne(filter: TriggerFilter, event: Event, endpoint: Endpoint | undefined): boolean {
  switch (filter.type) {
    case 'has-tag':
      return endpoint !== undefined && hasTag(endpoint, String(filter.value));
    case 'missing-tag':
      return endpoint === undefined || !hasTag(endpoint, String(filter.value));
    case 'has-status-detail':
      return endpoint !== undefined && endpoint.statusDetails[String(filter.value)] != null;
    case 'missing-status-detail':
      return endpoint === undefined || endpoint.statusDetails[String(filter.value)] == null;
    case 'has-endpoint':
      return event.endpointId !== null && (filter.value === undefined || filter.value === event.endpointKey || filter.value === event.endpointId);
    case 'one-of':
      return (filter.values ?? []).some((candidate) => same(fieldOf(event, filter.field), candidate));
    case 'contains': {
      const actual = fieldOf(event, filter.field);
      if (typeof actual === 'string') return actual.includes(String(filter.value));
      return Array.isArray(actual) && actual.some((item) => same(item, filter.value));
    }
    case '==':
      return same(fieldOf(event, filter.field), filter.value);
    case '!=':
      return !same(fieldOf(event, filter.field), filter.value);
    default:
      return compare(filter.type, fieldOf(event, filter.field), filter.value);
  }
}

function hasTag(endpoint: Endpoint, tag: string): boolean {
  if (tag.includes(':')) return endpoint.tags.includes(tag);
  return endpoint.tags.some((t) => parseTag(t).name === tag);
}

export function fieldOf(event: Event, field: string | undefined): unknown {
  if (!field) return undefined;
  let value: unknown = event;
  for (const part of field.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function same(a: unknown, b: unknown): boolean {
  return a === b || (typeof a === 'object' && a !== null && JSON.stringify(a) === JSON.stringify(b));
}

/** Numbers compare as numbers, strings as strings (ISO times sort right); anything else never matches. */
function compare(op: '>' | '>=' | '<=' | '<', actual: unknown, expected: unknown): boolean {
  const comparable = (typeof actual === 'number' && typeof expected === 'number') || (typeof actual === 'string' && typeof expected === 'string');
  if (!comparable) return false;
  const a = actual;
  const b = expected;
  return op === '>' ? a > b : op === '>=' ? a >= b : op === '<=' ? a <= b : a < b;
}
