/** Page sizes of every list in the API. */
export const PAGE_DEFAULT_LIMIT = 100;
export const PAGE_MAX_LIMIT = 1000;

export interface PageRequest {
  readonly limit: number;
  readonly offset: number;
}

export interface Page<T> {
  readonly items: T[];
  readonly total: number;
  readonly limit: number;
  readonly offset: number;
}

export function pageRequest(limit: number | undefined, offset: number | undefined): PageRequest {
  return {
    limit: Math.min(Math.max(limit ?? PAGE_DEFAULT_LIMIT, 1), PAGE_MAX_LIMIT),
    offset: Math.max(offset ?? 0, 0),
  };
}
