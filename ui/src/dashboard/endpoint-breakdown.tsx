import type { ApiData } from '../api/client';
import { endpointsHref } from '../endpoints/endpoint-query';
import { href } from '../router/hash-location';
import { serviceTypeLabel } from '../services/service-types';
import type { Service } from '../services/use-services';

type Values = ApiData<'/metrics/distribution'>['values'];

const NUMBER = new Intl.NumberFormat('en');

/** Endpoints by state: each count links to the list filtered by that state. */
export function EndpointsByState({ values }: { readonly values: Values }) {
  const count = (state: string) => values.find((entry) => entry.value === state)?.count ?? 0;
  return (
    <section className="card dashboard-tile" aria-labelledby="by-state-title">
      <h2 id="by-state-title">Endpoints by state</h2>
      <ul className="breakdown">
        {['connected', 'unavailable'].map((state) => (
          <li key={state}>
            <a href={href('/endpoints', { state })} aria-label={`${NUMBER.format(count(state))} ${state}: show them`}>
              <span className={`state state-${state}`}>{state}</span>
              <span className="breakdown-count">{NUMBER.format(count(state))}</span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Endpoints by protocol (the service's type), and under each protocol its services, each linking to its endpoints. */
export function EndpointsByProtocol({ values, services }: { readonly values: Values; readonly services: ReadonlyMap<string, Service> }) {
  const byType = new Map<string, { total: number; services: { id: string; name: string; count: number }[] }>();
  for (const { value, count } of values) {
    const id = String(value);
    const service = services.get(id);
    const type = service?.type ?? 'unknown';
    const entry = byType.get(type) ?? { total: 0, services: [] };
    entry.total += count;
    entry.services.push({ id, name: service?.name ?? id, count });
    byType.set(type, entry);
  }
  const types = [...byType].sort(([, a], [, b]) => b.total - a.total);
  return (
    <section className="card dashboard-tile" aria-labelledby="by-protocol-title">
      <h2 id="by-protocol-title">Endpoints by protocol</h2>
      {types.length === 0 ? <p className="muted">No endpoints yet.</p> : null}
      <ul className="breakdown">
        {types.map(([type, entry]) => (
          <li key={type}>
            <div className="breakdown-row">
              <span className="breakdown-name">{serviceTypeLabel(type)}</span>
              <span className="breakdown-count">{NUMBER.format(entry.total)}</span>
            </div>
            <ul className="breakdown breakdown-nested">
              {entry.services.map((service) => (
                <li key={service.id}>
                  <a href={endpointsHref({ serviceId: service.id })} aria-label={`${NUMBER.format(service.count)} endpoints of service ${service.name}`}>
                    <span className="breakdown-name">{service.name}</span>
                    <span className="breakdown-count">{NUMBER.format(service.count)}</span>
                  </a>
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </section>
  );
}
