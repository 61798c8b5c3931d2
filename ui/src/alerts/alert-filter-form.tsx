import { useId, useState, type FormEvent } from 'react';
import { splitTags } from '../endpoints/endpoint-query';
import { endpointRef } from '../history/history-query';
import { navigate } from '../router/hash-location';
import { alertsHref, isFiltered, type AlertQuery, type StateFilter } from './alert-query';
import { SEVERITIES, type AlertRule, type Severity } from './alert-types';

const STATE_CHOICES: ReadonlyArray<{ readonly value: StateFilter; readonly label: string }> = [
  { value: '', label: 'Open, then acknowledged' },
  { value: 'open', label: 'Open' },
  { value: 'acknowledged', label: 'Acknowledged' },
  { value: 'closed', label: 'Closed' },
  { value: 'all', label: 'Any state' },
];

/** State, severity, tags, endpoint and rule; applying it goes to the first page of what matches. */
export function AlertFilterForm({ query, rules }: { readonly query: AlertQuery; readonly rules: readonly AlertRule[] }) {
  const id = useId();
  const [state, setState] = useState<StateFilter>(query.state);
  const [severity, setSeverity] = useState<Severity | ''>(query.severity);
  const [tags, setTags] = useState(query.tags.join(', '));
  const [endpoint, setEndpoint] = useState(query.endpoint.startsWith('k.') ? query.endpoint.slice(2) : query.endpoint);
  const [ruleId, setRuleId] = useState(query.ruleId);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(alertsHref({ state, severity, tags: splitTags(tags), endpoint: endpointRef(endpoint), ruleId }));
  };

  return (
    <form className="filter-form" role="search" aria-label="Filter alerts" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-state`}>State</label>
        <select id={`${id}-state`} value={state} onChange={(event) => setState(event.target.value as StateFilter)}>
          {STATE_CHOICES.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-severity`}>Severity</label>
        <select id={`${id}-severity`} value={severity} onChange={(event) => setSeverity(event.target.value as Severity | '')}>
          <option value="">Any severity</option>
          {SEVERITIES.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-tags`}>Tags</label>
        <input id={`${id}-tags`} value={tags} onChange={(event) => setTags(event.target.value)} placeholder="cold-chain site:hamburg" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-endpoint`}>Endpoint key or id</label>
        <input id={`${id}-endpoint`} value={endpoint} onChange={(event) => setEndpoint(event.target.value)} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-rule`}>Rule</label>
        <select id={`${id}-rule`} value={ruleId} onChange={(event) => setRuleId(event.target.value)}>
          <option value="">Any rule</option>
          {/* A rule deleted since keeps its alerts: its id stays choosable. */}
          {ruleId !== '' && !rules.some((rule) => rule.id === ruleId) ? <option value={ruleId}>{ruleId}</option> : null}
          {rules.map((rule) => (
            <option key={rule.id} value={rule.id}>
              {rule.name}
            </option>
          ))}
        </select>
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Search
        </button>
        {isFiltered(query) ? (
          <a className="button button-quiet" href={alertsHref({})}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}
