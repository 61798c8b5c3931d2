import { useId, useState, type FormEvent } from 'react';
import { navigate } from '../router/hash-location';
import type { Service } from '../services/use-services';
import { ENDPOINT_STATES, endpointsHref, splitTags, type EndpointQuery, type EndpointStateFilter } from './endpoint-query';

/** Key prefix, tags, service and state; applying it goes to the first page of the filtered list. */
export function EndpointFilterForm({ query, services }: { readonly query: EndpointQuery; readonly services: readonly Service[] }) {
  const id = useId();
  const [keyPrefix, setKeyPrefix] = useState(query.keyPrefix);
  const [tags, setTags] = useState(query.tags.join(', '));
  const [serviceId, setServiceId] = useState(query.serviceId);
  const [state, setState] = useState<EndpointStateFilter>(query.state);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(endpointsHref({ keyPrefix: keyPrefix.trim(), tags: splitTags(tags), serviceId, state, offset: 0 }));
  };
  const filtered = query.keyPrefix !== '' || query.tags.length > 0 || query.serviceId !== '' || query.state !== '';

  return (
    <form className="filter-form" role="search" aria-label="Filter endpoints" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-prefix`}>Key starts with</label>
        <input id={`${id}-prefix`} value={keyPrefix} onChange={(event) => setKeyPrefix(event.target.value)} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-tags`}>Tags</label>
        <input id={`${id}-tags`} value={tags} onChange={(event) => setTags(event.target.value)} placeholder="site:berlin, battery" spellCheck={false} />
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
        <label htmlFor={`${id}-state`}>State</label>
        <select id={`${id}-state`} value={state} onChange={(event) => setState(ENDPOINT_STATES.find((value) => value === event.target.value) ?? '')}>
          <option value="">Any state</option>
          {ENDPOINT_STATES.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Filter
        </button>
        {filtered ? (
          <a className="button button-quiet" href={endpointsHref({})}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}
