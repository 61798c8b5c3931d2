import { useCallback, useMemo, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { useServiceIndex } from '../services/use-services';
import { useSession } from '../session/session';
import { EventPage } from './event-page';
import { EventTable } from './event-table';
import { HistoryFilterForm } from './history-filter-form';
import { HISTORY_PAGE_SIZE, historyHref, readHistoryQuery } from './history-query';
import './history.css';
import { LiveTail } from './live-tail';

/** `#/history`: the search and the live tail; `#/history/<id>`: one event. */
export function HistoryPage({ search, id }: { readonly search: URLSearchParams; readonly id?: string }) {
  if (id !== undefined) return <EventPage key={id} id={id} />;
  return <HistorySearch search={search} />;
}

/** The account's events, newest first, filtered by type, endpoint, service and period, a page at a time. */
function HistorySearch({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('History');
  const { api } = useSession();
  const query = useMemo(() => readHistoryQuery(search), [search]);
  const { endpoint, serviceId, from, to, next } = query;
  const typeList = query.types.join('\n');
  const [live, setLive] = useState(false);

  const load = useCallback(() => {
    const types = typeList === '' ? undefined : typeList.split('\n');
    const optional = (value: string) => (value === '' ? undefined : value);
    return call(
      api.GET('/history', {
        params: { query: { limit: HISTORY_PAGE_SIZE, type: types, endpoint: optional(endpoint), serviceId: optional(serviceId), from: optional(from), to: optional(to), next: optional(next) } },
      }),
    );
  }, [api, typeList, endpoint, serviceId, from, to, next]);
  const events = useResource(load);
  const services = useServiceIndex(api);
  const serviceList = useMemo(() => [...(services.data?.values() ?? [])].sort((a, b) => a.name.localeCompare(b.name)), [services.data]);
  const serviceIndex = services.data ?? new Map();

  return (
    <section aria-labelledby="history-title">
      <div className="history-head">
        <h1 id="history-title">History</h1>
        <button type="button" className="button button-quiet" aria-pressed={live} onClick={() => setLive(!live)}>
          {live ? 'Stop live tail' : 'Live tail'}
        </button>
      </div>
      {/* A new filter in the URL (a link, back/forward) starts the form afresh. */}
      <HistoryFilterForm key={search.toString()} query={query} services={serviceList} />
      {live ? <LiveTail key={search.toString()} query={query} services={serviceIndex} /> : null}
      <ErrorMessage message={events.error ?? services.error} />
      {events.data === undefined ? (
        events.error === undefined ? <Loading what="events" /> : null
      ) : (
        <div aria-busy={events.loading}>
          <nav className="pager" aria-label="Pages of events">
            <span className="pager-range" aria-live="polite">
              {events.data.items.length === 0 ? 'No events' : `${events.data.items.length} events${next === '' ? ', the newest first' : ', older ones'}`}
            </span>
            <span className="pager-links">
              {next === '' ? (
                <span className="button button-quiet" aria-disabled="true">
                  Newest
                </span>
              ) : (
                <a className="button button-quiet" href={historyHref({ ...query, next: '' })}>
                  Newest
                </a>
              )}
              {events.data.next === null ? (
                <span className="button button-quiet" aria-disabled="true">
                  Older
                </span>
              ) : (
                <a className="button button-quiet" href={historyHref({ ...query, next: events.data.next })} rel="next">
                  Older
                </a>
              )}
            </span>
          </nav>
          {events.data.items.length === 0 ? <p className="muted">No event matches.</p> : <EventTable events={events.data.items} services={serviceIndex} label="Events" />}
        </div>
      )}
    </section>
  );
}
