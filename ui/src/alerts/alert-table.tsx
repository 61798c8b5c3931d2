import { href } from '../router/hash-location';
import { alertPath, endpointPath } from '../router/routes';
import { AlertActions } from './alert-actions';
import { AlertStateBadge, SeverityBadge } from './alert-badges';
import { alertsHref } from './alert-query';
import { valueText, type Alert } from './alert-types';
import { ShortTime } from './short-time';

const COUNT = new Intl.NumberFormat('en');

export interface AlertTableProps {
  readonly alerts: readonly Alert[];
  /** When the list was loaded (epoch ms): today's times show without their date. */
  readonly now: number;
  readonly onChanged: (alert: Alert) => void;
}

/**
 * One row per alert: severity and name (to its page), endpoint (to its page), tags (each to the list filtered by it),
 * state, opened and last updated, occurrences, the last value, and Acknowledge / Close.
 */
export function AlertTable({ alerts, now, onChanged }: AlertTableProps) {
  return (
    <div className="table-scroll">
      <table className="table alt-table" aria-label="Alerts">
        <thead>
          <tr>
            <th scope="col">Alert</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Tags</th>
            <th scope="col">State</th>
            <th scope="col">Opened</th>
            <th scope="col">Updated</th>
            <th scope="col">Occurrences</th>
            <th scope="col">Value</th>
            <th scope="col" className="alt-actions-head">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((alert) => (
            <tr key={alert.id} className={`alt-row alt-row-${alert.state}`}>
              <td className="alt-name">
                <SeverityBadge severity={alert.severity} />
                <a href={href(alertPath(alert.id))}>{alert.name}</a>
              </td>
              <td className="alt-endpoint">{alert.endpointId === null ? <span className="muted">—</span> : <a href={href(endpointPath(alert.endpointId))}>{alert.endpointKey ?? alert.endpointId}</a>}</td>
              <td>
                <AlertTags tags={alert.tags} />
              </td>
              <td>
                <AlertStateBadge state={alert.state} />
              </td>
              <td className="nowrap">
                <ShortTime value={alert.openedAt} now={now} />
              </td>
              <td className="nowrap">
                <ShortTime value={alert.updatedAt} now={now} />
              </td>
              <td className="alt-count">{COUNT.format(alert.occurrences)}</td>
              <td className="mono alt-value" title={valueText(alert.value)}>
                {valueText(alert.value)}
              </td>
              <td className="alt-actions-cell">
                <AlertActions alert={alert} onChanged={onChanged} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Tags as chips, each linking to the alerts with that tag. */
export function AlertTags({ tags }: { readonly tags: readonly string[] }) {
  if (tags.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="tag-list">
      {tags.map((tag) => (
        <li key={tag}>
          <a className="tag" href={alertsHref({ tags: [tag] })} title={`Alerts tagged ${tag}`}>
            {tag}
          </a>
        </li>
      ))}
    </ul>
  );
}
