import { DateTime } from '../components/date-time';
import { StateBadge } from '../components/state-badge';
import { serviceTypeLabel } from '../services/service-types';
import type { Service } from '../services/use-services';
import type { Endpoint } from './endpoint-table';

/** The endpoint's own fields: state, last seen, service, ids, trace, times. */
export function EndpointFields({ endpoint, service }: { readonly endpoint: Endpoint; readonly service: Service | undefined }) {
  return (
    <dl className="fields">
      <dt>State</dt>
      <dd>
        <StateBadge state={endpoint.state} />
      </dd>
      <dt>Last seen</dt>
      <dd>
        <DateTime value={endpoint.lastSeenAt} />
      </dd>
      <dt>Service</dt>
      <dd>{service === undefined ? <span className="mono">{endpoint.serviceId}</span> : `${service.name} (${serviceTypeLabel(service.type)})`}</dd>
      <dt>ID</dt>
      <dd className="mono">{endpoint.id}</dd>
      <dt>Account</dt>
      <dd className="mono">{endpoint.accountId}</dd>
      <dt>Trace</dt>
      <dd>{endpoint.trace ? 'on' : 'off'}</dd>
      <dt>Created</dt>
      <dd>
        <DateTime value={endpoint.createdAt} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <DateTime value={endpoint.updatedAt} />
      </dd>
    </dl>
  );
}
