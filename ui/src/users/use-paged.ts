/** The offset a page's query names under `name` (0 when missing or not a non-negative integer). */
export function offsetParam(search: URLSearchParams, name: string): number {
  const requested = Number(search.get(name) ?? 0);
  return Number.isInteger(requested) && requested > 0 ? requested : 0;
}
