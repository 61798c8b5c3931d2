import { useCallback, useId, useMemo } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href, navigate } from '../router/hash-location';
import { servicePath, triggerPath } from '../router/routes';
import { useSession } from '../session/session';
import { FieldsInUse } from './fields-in-use';
import { healthHref, OBJECT_CHOICES, readHealthQuery, SORT_CHOICES, STATUS_LIMIT, type HealthQuery, type StatusObject, type StatusSort } from './health-query';
import './health.css';
import { StatusTable } from './status-table';

/**
 * `#/health`: every trigger, endpoint and service of the account with its state, last activity and errors of
 * the last 24 hours (`GET /metrics/status`), the worst first unless another order is chosen; then the fields
 * its objects use (`GET /metrics/fields`).
 */
export function HealthPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Health');
  const { api } = useSession();
  const query = useMemo(() => readHealthQuery(search), [search]);
  const { object, sort } = query;
  const load = useCallback(
    () => call(api.GET('/metrics/status', { params: { query: { sort, limit: STATUS_LIMIT, ...(object === '' ? {} : { object: [object] }) } } })),
    [api, object, sort],
  );
  const status = useResource(load);

  return (
    <section aria-labelledby="health-title">
      <div className="hlt-head">
        <h1 id="health-title">Health</h1>
        <button type="button" className="button button-quiet" onClick={status.reload} disabled={status.loading}>
          {status.loading ? 'Loading…' : 'Refresh'}
        </button>
      </div>
      <p className="muted hlt-intro">
        State, last activity and errors in the last 24 hours of the account’s triggers, endpoints and services: the first {STATUS_LIMIT} in the order chosen.
      </p>
      <StatusView query={query} />
      <ErrorMessage message={status.error} />
      {status.data === undefined ? (
        status.error === undefined ? <Loading what="the status" /> : null
      ) : (
        <div aria-busy={status.loading}>
          {status.data.items.length === 0 ? <NothingYet object={object} /> : <StatusTable items={status.data.items} query={query} />}
        </div>
      )}
      <FieldsInUse />
    </section>
  );
}

/** Which objects and in what order; each choice shows at once (and lands in the URL). */
function StatusView({ query }: { readonly query: HealthQuery }) {
  const id = useId();
  return (
    <form className="filter-form" role="search" aria-label="Status view" onSubmit={(event) => event.preventDefault()}>
      <div className="field">
        <label htmlFor={`${id}-object`}>Show</label>
        <select id={`${id}-object`} value={query.object} onChange={(event) => navigate(healthHref({ ...query, object: event.target.value as StatusObject | '' }))}>
          <option value="">Triggers, endpoints and services</option>
          {OBJECT_CHOICES.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-sort`}>Sort by</label>
        <select id={`${id}-sort`} value={query.sort} onChange={(event) => navigate(healthHref({ ...query, sort: event.target.value as StatusSort }))}>
          {SORT_CHOICES.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
    </form>
  );
}

function NothingYet({ object }: { readonly object: StatusObject | '' }) {
  if (object === 'trigger') {
    return (
      <p className="muted">
        No triggers yet. <a href={href(triggerPath('new'))}>Create a trigger</a> to run a script on the account’s events.
      </p>
    );
  }
  if (object === 'service') {
    return (
      <p className="muted">
        No services yet. <a href={href(servicePath('new'))}>Create a service</a> for the devices to connect to.
      </p>
    );
  }
  if (object === 'endpoint') {
    return (
      <p className="muted">
        No endpoints yet. One appears when a device connects to a <a href={href('/services')}>service</a>, or when <code>POST /endpoints</code> creates it.
      </p>
    );
  }
  return (
    <p className="muted">
      Nothing to watch yet. <a href={href(servicePath('new'))}>Create a service</a> for devices to connect to, and a <a href={href(triggerPath('new'))}>trigger</a> to handle their
      events; each shows here with its state and errors.
    </p>
  );
}
