import { useId, useState, type FormEvent } from 'react';
import { endpointRef, fromLocalInput, toLocalInput } from '../history/history-query';
import { navigate } from '../router/hash-location';
import { isFiltered, LEVEL_CHOICES, logsHref, SOURCES, type LogLevel, type LogQuery, type LogSource } from './log-query';

export interface TriggerName {
  readonly id: string;
  readonly name: string;
}

/** Level, sources, text, endpoint, trigger and period; applying it goes to the newest matching entries. */
export function LogFilterForm({ query, triggers }: { readonly query: LogQuery; readonly triggers: readonly TriggerName[] }) {
  const id = useId();
  const [level, setLevel] = useState<LogLevel | ''>(query.level);
  const [sources, setSources] = useState<ReadonlySet<LogSource>>(new Set(query.sources));
  const [text, setText] = useState(query.text);
  const [endpoint, setEndpoint] = useState(query.endpoint);
  const [trigger, setTrigger] = useState(query.trigger);
  const [from, setFrom] = useState(toLocalInput(query.from));
  const [to, setTo] = useState(toLocalInput(query.to));
  // A trigger of the URL beyond the names loaded still shows, by its id.
  const choices = trigger === '' || triggers.some((item) => item.id === trigger) ? triggers : [...triggers, { id: trigger, name: trigger }];

  const toggle = (source: LogSource, on: boolean) => {
    const changed = new Set(sources);
    if (on) changed.add(source);
    else changed.delete(source);
    setSources(changed);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(
      logsHref({
        level,
        sources: SOURCES.filter((source) => sources.has(source)),
        text: text.trim(),
        endpoint: endpointRef(endpoint),
        trigger,
        from: fromLocalInput(from),
        to: fromLocalInput(to),
        timeout: query.timeout,
      }),
    );
  };

  return (
    <form className="filter-form log-filter" role="search" aria-label="Filter log entries" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-level`}>Level</label>
        <select id={`${id}-level`} value={level} onChange={(event) => setLevel(event.target.value as LogLevel | '')}>
          <option value="">Any level</option>
          {LEVEL_CHOICES.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
      <fieldset className="field log-sources">
        <legend>Sources</legend>
        <div className="log-source-list">
          {SOURCES.map((source) => (
            <label key={source} className="log-source">
              <input type="checkbox" checked={sources.has(source)} onChange={(event) => toggle(source, event.target.checked)} /> {source}
            </label>
          ))}
        </div>
      </fieldset>
      <div className="field">
        <label htmlFor={`${id}-text`}>Message contains</label>
        <input id={`${id}-text`} value={text} maxLength={200} onChange={(event) => setText(event.target.value)} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-endpoint`}>Endpoint key or id</label>
        <input id={`${id}-endpoint`} value={endpoint} onChange={(event) => setEndpoint(event.target.value)} spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-trigger`}>Trigger</label>
        <select id={`${id}-trigger`} value={trigger} onChange={(event) => setTrigger(event.target.value)}>
          <option value="">All triggers</option>
          {choices.map((item) => (
            <option key={item.id} value={item.id}>
              {item.name}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-from`}>From</label>
        <input id={`${id}-from`} type="datetime-local" step={1} value={from} onChange={(event) => setFrom(event.target.value)} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-to`}>To (not included)</label>
        <input id={`${id}-to`} type="datetime-local" step={1} value={to} onChange={(event) => setTo(event.target.value)} />
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Search
        </button>
        {isFiltered(query) ? (
          <a className="button button-quiet" href={logsHref({ timeout: query.timeout })}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}
