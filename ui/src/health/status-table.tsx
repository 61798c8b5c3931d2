import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { endpointPath, EXECUTIONS_PATH, servicePath, triggerPath } from '../router/routes';
import { errorsHref, headerSort, healthHref, type HealthQuery, type StatusItem, type StatusSort } from './health-query';
import { HealthState } from './health-state';

const NUMBER = new Intl.NumberFormat('en');
const KINDS = { trigger: 'Trigger', endpoint: 'Endpoint', service: 'Service' } as const;

function objectPath(item: StatusItem): string {
  if (item.object === 'trigger') return triggerPath(item.id);
  if (item.object === 'endpoint') return endpointPath(item.id);
  return servicePath(item.id);
}

type Column = 'name' | 'lastActivity' | 'errors';

function ariaSort(column: Column, sort: StatusSort): 'ascending' | 'descending' | undefined {
  if (sort === column) return 'ascending';
  if (sort === `-${column}`) return 'descending';
  return undefined;
}

/** A column header that sorts by it: a link, so the order is in the URL like the rest of the view. */
function SortHeader({ column, label, query, className }: { readonly column: Column; readonly label: string; readonly query: HealthQuery; readonly className?: string }) {
  const sorted = ariaSort(column, query.sort);
  return (
    <th scope="col" aria-sort={sorted} className={className}>
      <a className="hlt-sort" href={healthHref({ ...query, sort: headerSort(column, query.sort) })}>
        {label}
        <span aria-hidden="true" className="hlt-sort-mark">
          {sorted === 'ascending' ? ' ▲' : sorted === 'descending' ? ' ▼' : ''}
        </span>
      </a>
    </th>
  );
}

/**
 * One row per object in the API's order: name (to its page), kind, state, errors in the window (to where they
 * are listed: first, so a phone shows them without scrolling), last activity, a trigger's runs, a service's
 * endpoints per state.
 */
export function StatusTable({ items, query }: { readonly items: readonly StatusItem[]; readonly query: HealthQuery }) {
  return (
    <div className="table-scroll">
      <table className="table table-compact hlt-table" aria-label="Status">
        <thead>
          <tr>
            <SortHeader column="name" label="Name" query={query} />
            <th scope="col">Kind</th>
            <th scope="col">State</th>
            <SortHeader column="errors" label="Errors (24 h)" query={query} className="hlt-number" />
            <SortHeader column="lastActivity" label="Last activity" query={query} />
            <th scope="col" className="hlt-number">
              Runs (24 h)
            </th>
            <th scope="col">Endpoints</th>
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={`${item.object}-${item.id}`}>
              <td className="hlt-name">
                <a className={item.object === 'endpoint' ? 'mono' : undefined} href={href(objectPath(item))}>
                  {item.name}
                </a>
              </td>
              <td>{KINDS[item.object]}</td>
              <td>
                <HealthState state={item.state} />
              </td>
              <td className="hlt-number">
                <Errors item={item} />
              </td>
              <td className="nowrap">
                <DateTime value={item.lastActivity} />
              </td>
              <td className="hlt-number">
                {item.runs === undefined ? null : (
                  <a href={href(EXECUTIONS_PATH, { triggerId: item.id })} aria-label={`${NUMBER.format(item.runs)} runs of ${item.name}`}>
                    {NUMBER.format(item.runs)}
                  </a>
                )}
              </td>
              <td className="nowrap">
                {item.endpoints === undefined ? null : (
                  <a href={href('/endpoints', { serviceId: item.id })} aria-label={`Endpoints of ${item.name}: ${item.endpoints.connected} connected, ${item.endpoints.unavailable} unavailable`}>
                    {NUMBER.format(item.endpoints.connected)} connected, {NUMBER.format(item.endpoints.unavailable)} unavailable
                  </a>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The count, linking to the errors themselves when there are any and they are listed somewhere. */
function Errors({ item }: { readonly item: StatusItem }) {
  const text = NUMBER.format(item.errors);
  const target = item.errors > 0 ? errorsHref(item) : undefined;
  if (target === undefined) return <span className={item.errors > 0 ? 'hlt-errors' : 'muted'}>{text}</span>;
  const noun = item.errors === 1 ? 'error' : 'errors';
  return (
    <a className="hlt-errors" href={target} aria-label={`${text} ${noun} of ${item.name}: ${item.object === 'trigger' ? 'its failed runs' : 'its error entries in the log'}`}>
      {text}
    </a>
  );
}
