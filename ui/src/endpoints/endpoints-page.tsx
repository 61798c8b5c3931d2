import { useCallback, useMemo, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { useSession } from '../session/session';
import { useServiceIndex } from '../services/use-services';
import { EndpointBulkEdit } from './endpoint-bulk-edit';
import { EndpointFilterForm } from './endpoint-filter-form';
import { ENDPOINTS_PAGE_SIZE, endpointFilterParams, endpointsHref, readEndpointQuery } from './endpoint-query';
import { EndpointTable, type RowSelection } from './endpoint-table';
import './endpoints.css';

/**
 * The endpoints of the acting account: filtered by key prefix, tags, service and state, a page at a time; rows
 * ticked on any page (or all that match) can be edited together.
 */
export function EndpointsPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Endpoints');
  const { api } = useSession();
  const query = useMemo(() => readEndpointQuery(search), [search]);
  const { keyPrefix, serviceId, state, offset } = query;
  const tagList = query.tags.join('\n');

  const load = useCallback(() => {
    const tags = tagList === '' ? [] : tagList.split('\n');
    const filter = endpointFilterParams({ keyPrefix, tags, serviceId, state, offset });
    return call(api.GET('/endpoints', { params: { query: { limit: ENDPOINTS_PAGE_SIZE, offset, ...filter } } }));
  }, [api, keyPrefix, tagList, serviceId, state, offset]);
  const endpoints = useResource(load);
  const services = useServiceIndex(api);
  const serviceList = useMemo(() => [...(services.data?.values() ?? [])].sort((a, b) => a.name.localeCompare(b.name)), [services.data]);

  // Ticked endpoints by id, with their keys: kept across pages until cleared.
  const [selected, setSelected] = useState<ReadonlyMap<string, string>>(new Map());
  const items = endpoints.data?.items;
  const selection = useMemo<RowSelection>(
    () => ({
      selected: new Set(selected.keys()),
      toggle: (id, on) =>
        setSelected((current) => {
          const next = new Map(current);
          const key = items?.find((endpoint) => endpoint.id === id)?.key ?? id;
          if (on) next.set(id, key);
          else next.delete(id);
          return next;
        }),
      toggleAll: (on) =>
        setSelected((current) => {
          const next = new Map(current);
          for (const endpoint of items ?? []) {
            if (on) next.set(endpoint.id, endpoint.key);
            else next.delete(endpoint.id);
          }
          return next;
        }),
    }),
    [selected, items],
  );
  const targets = useMemo(() => [...selected].map(([id, key]) => ({ id, key })), [selected]);

  return (
    <section aria-labelledby="endpoints-title">
      <h1 id="endpoints-title">Endpoints</h1>
      {/* A new filter in the URL (a link, back/forward) starts the form afresh. */}
      <EndpointFilterForm key={search.toString()} query={query} services={serviceList} />
      <ErrorMessage message={endpoints.error ?? services.error} />
      {endpoints.data === undefined ? (
        endpoints.error === undefined ? <Loading what="endpoints" /> : null
      ) : (
        <>
          <div aria-busy={endpoints.loading}>
            <Pager total={endpoints.data.total} offset={endpoints.data.offset} limit={ENDPOINTS_PAGE_SIZE} noun="endpoints" hrefAt={(at) => endpointsHref({ ...query, offset: at })} />
            {endpoints.data.items.length === 0 ? (
              <p className="muted">No endpoint matches.</p>
            ) : (
              <EndpointTable endpoints={endpoints.data.items} services={services.data ?? new Map()} selection={selection} />
            )}
          </div>
          {endpoints.data.total === 0 && targets.length === 0 ? null : (
            <EndpointBulkEdit api={api} query={query} selected={targets} matching={endpoints.data.total} onDone={endpoints.reload} onClearSelection={() => setSelected(new Map())} />
          )}
        </>
      )}
    </section>
  );
}
