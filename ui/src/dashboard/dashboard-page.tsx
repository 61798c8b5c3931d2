import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { useServiceIndex } from '../services/use-services';
import { useSession } from '../session/session';
import './dashboard.css';
import { EndpointsByProtocol, EndpointsByState } from './endpoint-breakdown';
import { EventsChart } from './events-chart';
import { RecentErrors, TriggerRuns } from './trigger-health';
import { useTicker } from './use-ticker';

const NUMBER = new Intl.NumberFormat('en');
const CLOCK = new Intl.DateTimeFormat('en-GB', { timeStyle: 'medium' });

/** How often the dashboard loads its numbers again while it is shown. */
const REFRESH_MS = 30_000;
/** How many failed executions "Recent errors" lists. */
const RECENT_ERRORS = 5;

/**
 * The acting account at a glance: endpoints (by state, by protocol and service), services, events per minute
 * over the last hour, trigger runs and failures, the newest errors. Every number links to the list it counts.
 */
export function DashboardPage() {
  usePageTitle('Dashboard');
  const { api } = useSession();
  const ticks = useTicker(REFRESH_MS);
  const [refreshes, setRefreshes] = useState(0);
  const round = ticks + refreshes;

  const loadSummary = useCallback(async () => {
    void round;
    const [endpoints, services] = await Promise.all([
      call(api.GET('/endpoint/count', { params: { query: { total: true } } })),
      call(api.GET('/services', { params: { query: { limit: 1 } } })),
    ]);
    return { endpoints: endpoints.count, withSubAccounts: endpoints.total, services: services.total, at: new Date() };
  }, [api, round]);
  const loadBreakdown = useCallback(async () => {
    void round;
    const [state, service] = await Promise.all([
      call(api.GET('/metrics/distribution', { params: { query: { field: 'state' } } })),
      call(api.GET('/metrics/distribution', { params: { query: { field: 'serviceId', limit: 1000 } } })),
    ]);
    return { state: state.values, service: service.values };
  }, [api, round]);
  const loadEvents = useCallback(async () => {
    void round;
    return call(api.GET('/history/counts', { params: { query: { interval: 60 } } }));
  }, [api, round]);
  const loadTriggers = useCallback(async () => {
    void round;
    const now = Date.now();
    const [hour, day, failed] = await Promise.all([
      call(api.GET('/metrics/executions', { params: { query: { from: new Date(now - 3_600_000).toISOString() } } })),
      call(api.GET('/metrics/executions', { params: { query: { from: new Date(now - 86_400_000).toISOString() } } })),
      call(api.GET('/executions', { params: { query: { status: 'failed', limit: RECENT_ERRORS } } })),
    ]);
    // The triggers' names: one look-up per trigger among the few failures (a deleted trigger keeps its id).
    const ids = [...new Set(failed.items.map((execution) => execution.triggerId))];
    const names = new Map<string, string>();
    await Promise.all(
      ids.map(async (id) => {
        const found = await api.GET('/triggers/{id}', { params: { path: { id } } });
        if (found.data !== undefined) names.set(id, found.data.name);
      }),
    );
    return { hour, day, failures: failed.items, names };
  }, [api, round]);

  const summary = useResource(loadSummary);
  const breakdown = useResource(loadBreakdown);
  const events = useResource(loadEvents);
  const triggers = useResource(loadTriggers);
  const services = useServiceIndex(api);
  const data = summary.data;
  const busy = summary.loading || breakdown.loading || events.loading || triggers.loading;

  return (
    <section aria-labelledby="dashboard-title">
      <div className="dashboard-head">
        <h1 id="dashboard-title">Dashboard</h1>
        <p className="muted dashboard-updated" aria-live="polite">
          {busy ? 'Updating…' : data === undefined ? '' : `Updated ${CLOCK.format(data.at)}, every ${REFRESH_MS / 1000} s`}
          <button type="button" className="button button-quiet" onClick={() => setRefreshes((value) => value + 1)} disabled={busy}>
            Refresh
          </button>
        </p>
      </div>
      <ErrorMessage message={summary.error ?? breakdown.error ?? events.error ?? triggers.error ?? services.error} />
      <ul className="stats">
        <li className="card stat">
          <a href={href('/endpoints')}>
            <span className="stat-value">{data === undefined ? '…' : NUMBER.format(data.endpoints)}</span>
            <span className="stat-label">endpoints</span>
          </a>
          {data?.withSubAccounts === undefined || data.withSubAccounts === data.endpoints ? null : (
            <span className="muted">{NUMBER.format(data.withSubAccounts)} with sub-accounts</span>
          )}
        </li>
        <li className="card stat">
          <a href={href('/services')}>
            <span className="stat-value">{data === undefined ? '…' : NUMBER.format(data.services)}</span>
            <span className="stat-label">services</span>
          </a>
        </li>
        <li className="card stat">
          <a href={href('/history')}>
            <span className="stat-value">{events.data === undefined ? '…' : NUMBER.format(events.data.total)}</span>
            <span className="stat-label">events in the last hour</span>
          </a>
        </li>
      </ul>
      <div className="dashboard-grid">
        {breakdown.data === undefined ? (
          breakdown.error === undefined ? <Loading what="endpoint counts" /> : null
        ) : (
          <>
            <EndpointsByState values={breakdown.data.state} />
            <EndpointsByProtocol values={breakdown.data.service} services={services.data ?? new Map()} />
          </>
        )}
        <section className="card dashboard-tile dashboard-wide" aria-labelledby="events-title">
          <h2 id="events-title">Events per minute, last hour</h2>
          {events.data === undefined ? events.error === undefined ? <Loading what="event counts" /> : null : <EventsChart counts={events.data} />}
        </section>
        {triggers.data === undefined ? (
          triggers.error === undefined ? <Loading what="trigger runs" /> : null
        ) : (
          <>
            <TriggerRuns hour={triggers.data.hour} day={triggers.data.day} />
            <RecentErrors failures={triggers.data.failures} names={triggers.data.names} />
          </>
        )}
      </div>
    </section>
  );
}
