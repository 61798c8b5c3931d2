import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { ALERT_RULES_PATH, endpointPath } from '../router/routes';
import { useSession } from '../session/session';
import { AlertActions } from './alert-actions';
import { AlertStateBadge, SeverityBadge } from './alert-badges';
import { AlertHistory } from './alert-history';
import { AlertTags } from './alert-table';
import { valueText, type Alert } from './alert-types';
import { useLiveAlerts } from './use-live-alerts';
import './alerts.css';

const COUNT = new Intl.NumberFormat('en');

/** `#/alerts/<id>`: one alert (`GET /alerts/{id}`), its fields, Acknowledge / Close, and its history. */
export function AlertPage({ id }: { readonly id: string }) {
  const { api } = useSession();
  const { round } = useLiveAlerts();
  const load = useCallback(async () => {
    void round;
    return call(api.GET('/alerts/{id}', { params: { path: { id } } }));
  }, [api, id, round]);
  const loaded = useResource(load);
  // The PATCH answer shows at once, until a load brings a newer one.
  const [changed, setChanged] = useState<Alert | undefined>(undefined);
  const alert = changed !== undefined && (loaded.data === undefined || changed.updatedAt >= loaded.data.updatedAt) ? changed : loaded.data;
  usePageTitle(alert?.name ?? 'Alert');

  return (
    <section aria-labelledby="alert-title">
      <p className="breadcrumb">
        <a href={href('/alerts')}>Alerts</a>
      </p>
      <h1 id="alert-title" className="alt-title">
        {alert?.name ?? 'Alert'}
      </h1>
      <ErrorMessage message={alert === undefined ? loaded.error : undefined} />
      {alert === undefined ? (
        loaded.error === undefined ? <Loading what="the alert" /> : null
      ) : (
        <>
          <p className="alt-headline">
            <SeverityBadge severity={alert.severity} /> <AlertStateBadge state={alert.state} />
          </p>
          <div className={alert.state === 'closed' ? 'alt-panels alt-panels-one' : 'alt-panels'}>
            <AlertFields alert={alert} />
            {alert.state === 'closed' ? null : (
              <div className="card alt-act">
                <h2>Act on it</h2>
                <p className="muted">Acknowledge: someone is on it. Close: it is dealt with (the rule opens a new one on the next crossing).</p>
                <AlertActions
                  alert={alert}
                  onChanged={(next) => {
                    setChanged(next);
                    loaded.reload();
                  }}
                />
              </div>
            )}
          </div>
          <h2 id="alert-history-title">History</h2>
          <AlertHistory history={alert.history} />
        </>
      )}
    </section>
  );
}

/** The rule that opened the alert, by name (to its form); a script's alert has none, a deleted rule only its id. */
function RuleLink({ ruleId }: { readonly ruleId: string | null }) {
  const { api } = useSession();
  // The list, not GET /alert-rules/{id}: a deleted rule is no failed request.
  const load = useCallback(() => call(api.GET('/alert-rules')), [api]);
  const rules = useResource(load);
  if (ruleId === null) return <span className="muted">none: raised by a script</span>;
  const rule = rules.data?.items.find((item) => item.id === ruleId);
  if (rules.data !== undefined && rule === undefined) return <span className="muted">deleted ({ruleId})</span>;
  return <a href={href(ALERT_RULES_PATH, { edit: ruleId })}>{rule?.name ?? ruleId}</a>;
}

function AlertFields({ alert }: { readonly alert: Alert }) {
  return (
    <dl className="fields">
      <dt>Endpoint</dt>
      <dd>{alert.endpointId === null ? <span className="muted">none</span> : <a href={href(endpointPath(alert.endpointId))}>{alert.endpointKey ?? alert.endpointId}</a>}</dd>
      <dt>Rule</dt>
      <dd>
        <RuleLink ruleId={alert.ruleId} />
      </dd>
      <dt>Tags</dt>
      <dd>
        <AlertTags tags={alert.tags} />
      </dd>
      <dt>Value</dt>
      <dd className="mono alt-value-full">{valueText(alert.value) || <span className="muted">none</span>}</dd>
      <dt>Occurrences</dt>
      <dd>{COUNT.format(alert.occurrences)}</dd>
      <dt>Opened</dt>
      <dd>
        <DateTime value={alert.openedAt} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <DateTime value={alert.updatedAt} />
      </dd>
      <dt>Closed</dt>
      <dd>{alert.closedAt === null ? <span className="muted">not yet</span> : <DateTime value={alert.closedAt} />}</dd>
      <dt>Id</dt>
      <dd className="mono alt-id">{alert.id}</dd>
    </dl>
  );
}
