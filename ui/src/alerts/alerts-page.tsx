import { useCallback, useMemo, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href } from '../router/hash-location';
import { ALERT_RULES_PATH } from '../router/routes';
import { useSession } from '../session/session';
import { alertLabel } from './alert-actions';
import { AlertFilterForm } from './alert-filter-form';
import { ALERTS_PAGE_SIZE, alertsHref, isFiltered, readAlertQuery } from './alert-query';
import { AlertTable } from './alert-table';
import { AlertTabs } from './alert-tabs';
import type { Alert, AlertRule } from './alert-types';
import { loadAlerts } from './load-alerts';
import { LiveStatus } from './live-status';
import { useLiveAlerts } from './use-live-alerts';
import './alerts.css';

const DONE = { acknowledged: 'Acknowledged', closed: 'Closed', open: 'Opened' } as const;

/**
 * `#/alerts`: the account's alerts, by default the active ones (open first, then acknowledged), filtered by state,
 * severity, tags, endpoint and rule, a page at a time; acknowledged and closed from their row. Loaded again on
 * every `alert` event and every 15 s.
 */
export function AlertsPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Alerts');
  const { api } = useSession();
  const query = useMemo(() => readAlertQuery(search), [search]);
  const live = useLiveAlerts();
  const { round } = live;

  const load = useCallback(async () => {
    void round;
    return loadAlerts(api, query);
  }, [api, query, round]);
  const alerts = useResource(load);
  const loadRules = useCallback(() => call(api.GET('/alert-rules')), [api]);
  const rules = useResource(loadRules);
  const ruleList = rules.data?.items;

  // A row changed here shows its new state at once, until a load brings a newer one.
  const [changed, setChanged] = useState<ReadonlyMap<string, Alert>>(new Map());
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const items = alerts.data?.items.map((alert) => {
    const mine = changed.get(alert.id);
    return mine !== undefined && mine.updatedAt >= alert.updatedAt ? mine : alert;
  });
  const onChanged = (alert: Alert) => {
    setChanged((current) => new Map(current).set(alert.id, alert));
    setNotice(`${DONE[alert.state]} “${alertLabel(alert)}”.`);
    alerts.reload();
  };

  return (
    <section aria-labelledby="alerts-title">
      <h1 id="alerts-title">Alerts</h1>
      <AlertTabs current="alerts" />
      {/* A new filter in the URL (a link, back/forward) starts the form afresh. */}
      <AlertFilterForm key={search.toString()} query={query} rules={ruleList ?? []} />
      <ErrorMessage message={alerts.error} />
      {notice === undefined ? null : (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {alerts.data === undefined || items === undefined ? (
        alerts.error === undefined ? <Loading what="alerts" /> : null
      ) : (
        <div aria-busy={alerts.loading}>
          <div className="alt-list-head">
            <Pager total={alerts.data.total} offset={query.offset} limit={ALERTS_PAGE_SIZE} noun="alerts" hrefAt={(at) => alertsHref({ ...query, offset: at })} />
            <LiveStatus live={live.live} />
          </div>
          {items.length === 0 ? <NoAlerts filtered={isFiltered(query)} rules={ruleList} /> : <AlertTable alerts={items} now={alerts.data.at} onChanged={onChanged} />}
        </div>
      )}
    </section>
  );
}

/** What an empty list says: nothing matches, nothing is open, or there is no rule to open anything. */
function NoAlerts({ filtered, rules }: { readonly filtered: boolean; readonly rules: readonly AlertRule[] | undefined }) {
  if (filtered) return <p className="muted">No alert matches.</p>;
  if (rules !== undefined && rules.length === 0) {
    return (
      <div className="card alt-empty">
        <p>No alert rules yet: alerts open when an event crosses a rule’s condition.</p>
        <p>
          <a className="button" href={href(ALERT_RULES_PATH)}>
            Create an alert rule
          </a>
        </p>
      </div>
    );
  }
  return (
    <div className="card alt-empty">
      <p>No open alerts.</p>
      <p className="muted">
        The closed ones are under State “Closed”; the <a href={href(ALERT_RULES_PATH)}>rules</a> say what opens one.
      </p>
    </div>
  );
}
