// Client routes live in the URL fragment (`/#/endpoints?tag=x`): the browser never sends it, so no client
// route can collide with an API path (`/endpoints` is the API's), and every page survives a reload.
import { useMemo, useSyncExternalStore } from 'react';

export interface HashLocation {
  /** `/endpoints/abc`: the part of the fragment before `?`, `/` when empty. */
  readonly path: string;
  readonly query: URLSearchParams;
}

function subscribe(onChange: () => void): () => void {
  window.addEventListener('hashchange', onChange);
  return () => window.removeEventListener('hashchange', onChange);
}

const currentHash = () => window.location.hash;

/** The route in the fragment; the component re-renders when it changes. */
export function useHashLocation(): HashLocation {
  const hash = useSyncExternalStore(subscribe, currentHash);
  return useMemo(() => parseHash(hash), [hash]);
}

export function parseHash(hash: string): HashLocation {
  const fragment = hash.startsWith('#') ? hash.slice(1) : hash;
  const separator = fragment.indexOf('?');
  const path = separator === -1 ? fragment : fragment.slice(0, separator);
  return { path: path === '' ? '/' : path, query: new URLSearchParams(separator === -1 ? '' : fragment.slice(separator + 1)) };
}

export type QueryValues = Readonly<Record<string, string | readonly string[] | number | undefined>>;

/** `#/endpoints?tag=a&tag=b`: a link target; empty and undefined values are left out. */
export function href(path: string, query: QueryValues = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== undefined && item !== '') search.append(name, String(item));
    }
  }
  const text = search.toString();
  return `#${path}${text === '' ? '' : `?${text}`}`;
}

/** Goes to a link made by {@link href} (a new history entry, as a click would). */
export function navigate(target: string): void {
  window.location.hash = target.startsWith('#') ? target.slice(1) : target;
}
