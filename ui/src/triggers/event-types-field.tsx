import { useId, useState, type KeyboardEvent } from 'react';
import { PLATFORM_EVENT_TYPES } from './trigger-types';

/** The event types a trigger runs on: chips, and a free entry offering the platform's types. */
export function EventTypesField({ events, onChange }: { readonly events: readonly string[]; readonly onChange: (events: readonly string[]) => void }) {
  const id = useId();
  const [entry, setEntry] = useState('');

  const add = () => {
    const type = entry.trim();
    if (type !== '' && !events.includes(type)) onChange([...events, type]);
    setEntry('');
  };
  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      add();
    }
  };

  return (
    <fieldset className="trg-trigger-fieldset">
      <legend>Event types</legend>
      {events.length === 0 ? (
        <p className="muted">None yet: a library trigger needs none, any other runs on the types listed here.</p>
      ) : (
        <ul className="tag-list trg-event-type-list" aria-label="Event types">
          {events.map((type) => (
            <li key={type} className="tag">
              <span className="mono">{type}</span>
              <button type="button" className="trg-chip-remove" aria-label={`Remove event type ${type}`} onClick={() => onChange(events.filter((item) => item !== type))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div className="trg-inline-entry">
        <label htmlFor={`${id}-type`} className="visually-hidden">
          Event type to add
        </label>
        <input id={`${id}-type`} list={`${id}-types`} value={entry} onChange={(event) => setEntry(event.target.value)} onKeyDown={onKeyDown} placeholder="lwm2m-data, or your own type" spellCheck={false} />
        <datalist id={`${id}-types`} data-testid="platform-event-types">
          {PLATFORM_EVENT_TYPES.map((type) => (
            <option key={type} value={type} />
          ))}
        </datalist>
        <button type="button" className="button button-quiet" onClick={add}>
          Add type
        </button>
      </div>
    </fieldset>
  );
}
