import { useCallback } from 'react';
import { call, type ApiClient } from '../api/client';
import { useResource, type Resource } from '../api/use-resource';
import type { ObjectDefinition } from './lwm2m-types';

/** How many registry entries are listed at once (the API's largest page). */
const REGISTRY_PAGE = 1000;

/**
 * The registry's definitions (names, resources, operations, types) of the objects `objectIds`, by id: the
 * account's list (`GET /lwm2m/objects`) says which it has, then `GET /lwm2m/objects/{id}` each. An object the
 * registry lacks is left out (the page shows its ids only).
 */
export function useObjectDefinitions(api: ApiClient, objectIds: readonly number[]): Resource<ReadonlyMap<number, ObjectDefinition>> {
  const wanted = objectIds.join(',');
  const load = useCallback(async () => {
    const ids = wanted === '' ? [] : wanted.split(',').map(Number);
    const known = new Set<number>();
    for (let offset = 0; ; offset += REGISTRY_PAGE) {
      const page = await call(api.GET('/lwm2m/objects', { params: { query: { limit: REGISTRY_PAGE, offset } } }));
      for (const item of page.items) known.add(item.id);
      if (offset + page.items.length >= page.total || page.items.length === 0) break;
    }
    const definitions = await Promise.all(ids.filter((id) => known.has(id)).map((id) => call(api.GET('/lwm2m/objects/{objectId}', { params: { path: { objectId: id } } }))));
    return new Map(definitions.map((definition) => [definition.id, definition]));
  }, [api, wanted]);
  return useResource(load);
}
