import { useId, useState, type FormEvent } from 'react';
import { navigate } from '../router/hash-location';
import type { Service } from '../services/use-services';
import { endpointRef, fromLocalInput, historyHref, splitTypes, toLocalInput, type HistoryQuery } from './history-query';

/** Type, endpoint, service and period; applying it goes to the newest matching events. */
export function HistoryFilterForm({ query, services }: { readonly query: HistoryQuery; readonly services: readonly Service[] }) {
  const id = useId();
  const [types, setTypes] = useState(query.types.join(', '));
  const [endpoint, setEndpoint] = useState(query.endpoint);
  const [serviceId, setServiceId] = useState(query.serviceId);
  const [from, setFrom] = useState(toLocalInput(query.from));
  const [to, setTo] = useState(toLocalInput(query.to));

  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(historyHref({ types: splitTypes(types), endpoint: endpointRef(endpoint), serviceId, from: fromLocalInput(from), to: fromLocalInput(to) }));
  };
  const filtered = query.types.length > 0 || query.endpoint !== '' || query.serviceId !== '' || query.from !== '' || query.to !== '';

  return (
    <form className="filter-form" role="search" aria-label="Filter events" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-type`}>Types</label>
        <input id={`${id}-type`} value={types} onChange={(event) => setTypes(event.target.value)} placeholder="reading, alarm" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-endpoint`}>Endpoint key or id</label>
        <input id={`${id}-endpoint`} value={endpoint} onChange={(event) => setEndpoint(event.target.value)} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-service`}>Service</label>
        <select id={`${id}-service`} value={serviceId} onChange={(event) => setServiceId(event.target.value)}>
          <option value="">All services</option>
          {services.map((service) => (
            <option key={service.id} value={service.id}>
              {service.name}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-from`}>From</label>
        <input id={`${id}-from`} type="datetime-local" step={1} value={from} onChange={(event) => setFrom(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-to`}>To</label>
        <input id={`${id}-to`} type="datetime-local" step={1} value={to} onChange={(event) => setTo(event.target.value)} />
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Search
        </button>
        {filtered ? (
          <a className="button button-quiet" href={historyHref({})}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}
