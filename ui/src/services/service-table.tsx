import { DateTime } from '../components/date-time';
import { endpointsHref } from '../endpoints/endpoint-query';
import { href } from '../router/hash-location';
import { servicePath } from '../router/routes';
import { serviceTypeLabel } from './service-types';
import type { Service } from './use-services';

/** One row per service: its name opens it (edit, delete), and a link lists its endpoints. */
export function ServiceTable({ services }: { readonly services: readonly Service[] }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Services">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Endpoints</th>
            <th scope="col">ID</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {services.map((service) => (
            <tr key={service.id}>
              <td>
                <a href={href(servicePath(service.id))} title={`Edit ${service.name}`}>
                  {service.name}
                </a>
              </td>
              <td>{serviceTypeLabel(service.type)}</td>
              <td>
                <a href={endpointsHref({ serviceId: service.id })} aria-label={`Endpoints of ${service.name}`}>
                  Endpoints
                </a>
              </td>
              <td className="mono nowrap">{service.id}</td>
              <td>
                <DateTime value={service.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
