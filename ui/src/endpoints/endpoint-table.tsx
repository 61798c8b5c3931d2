import type { ApiData } from '../api/client';
import { DateTime } from '../components/date-time';
import { StateBadge } from '../components/state-badge';
import { TagList } from '../components/tag-list';
import { href } from '../router/hash-location';
import { endpointPath } from '../router/routes';
import { serviceTypeLabel } from '../services/service-types';
import type { Service } from '../services/use-services';
import { endpointsHref } from './endpoint-query';

export type Endpoint = ApiData<'/endpoints/{ref}'>;

/** Which rows are ticked, and how to change that; without it the table has no checkboxes. */
export interface RowSelection {
  readonly selected: ReadonlySet<string>;
  readonly toggle: (id: string, on: boolean) => void;
  readonly toggleAll: (on: boolean) => void;
}

/**
 * One row per endpoint: key (to its page), service, state, protocol, tags (to the list filtered by them), last
 * seen. With `selection`, a checkbox before each key and one before the heading for the whole page.
 */
export function EndpointTable({ endpoints, services, selection }: { readonly endpoints: readonly Endpoint[]; readonly services: ReadonlyMap<string, Service>; readonly selection?: RowSelection }) {
  const ticked = endpoints.filter((endpoint) => selection?.selected.has(endpoint.id)).length;
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Endpoints">
        <thead>
          <tr>
            <th scope="col" className="nowrap">
              {selection === undefined ? null : (
                <input
                  type="checkbox"
                  className="row-check"
                  aria-label="Select every endpoint of this page"
                  checked={endpoints.length > 0 && ticked === endpoints.length}
                  ref={(box) => {
                    if (box) box.indeterminate = ticked > 0 && ticked < endpoints.length;
                  }}
                  onChange={(event) => selection.toggleAll(event.target.checked)}
                />
              )}
              Key
            </th>
            <th scope="col">Service</th>
            <th scope="col">State</th>
            <th scope="col">Protocol</th>
            <th scope="col">Tags</th>
            <th scope="col">Last seen</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((endpoint) => {
            const service = services.get(endpoint.serviceId);
            return (
              <tr key={endpoint.id}>
                <td className="mono nowrap">
                  {selection === undefined ? null : (
                    <input
                      type="checkbox"
                      className="row-check"
                      aria-label={`Select ${endpoint.key}`}
                      checked={selection.selected.has(endpoint.id)}
                      onChange={(event) => selection.toggle(endpoint.id, event.target.checked)}
                    />
                  )}
                  <a href={href(endpointPath(endpoint.id))}>{endpoint.key}</a>
                </td>
                <td>{service?.name ?? <span className="mono">{endpoint.serviceId}</span>}</td>
                <td>
                  <StateBadge state={endpoint.state} />
                </td>
                <td>{service === undefined ? '' : serviceTypeLabel(service.type)}</td>
                <td>
                  <TagList tags={endpoint.tags} hrefFor={(tag) => endpointsHref({ tags: [tag] })} />
                </td>
                <td>
                  <DateTime value={endpoint.lastSeenAt} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
