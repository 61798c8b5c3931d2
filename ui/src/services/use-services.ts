import { useCallback } from 'react';
import { call, type ApiClient, type ApiData } from '../api/client';
import { useResource, type Resource } from '../api/use-resource';

export type Service = ApiData<'/services/{id}'>;

/** How many services the endpoint pages look up at once (names, types and the service filter). */
const SERVICES_LOOKED_UP = 1000;

/** Every service of the acting account by id, for showing endpoints' service names and protocols. */
export function useServiceIndex(api: ApiClient): Resource<ReadonlyMap<string, Service>> {
  const load = useCallback(async () => {
    const page = await call(api.GET('/services', { params: { query: { limit: SERVICES_LOOKED_UP } } }));
    return new Map(page.items.map((service) => [service.id, service]));
  }, [api]);
  return useResource(load);
}
