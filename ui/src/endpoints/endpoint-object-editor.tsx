import { useId, useState, type FormEvent } from 'react';
import { messageOf, type ApiClient } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { JsonTable } from '../components/json-table';
import { patchEndpoint } from './endpoint-patch';
import type { Endpoint } from './endpoint-table';
import { valueOfText } from './json-text';

/**
 * Status details or parameters as a name/value table, with setting one name (its value as JSON, or text) and
 * removing one: a JSON Merge Patch of that field (`null` removes). The API checks the value.
 */
export function EndpointObjectEditor({
  api,
  endpoint,
  field,
  caption,
  onChanged,
}: {
  readonly api: ApiClient;
  readonly endpoint: Endpoint;
  readonly field: 'statusDetails' | 'parameters';
  readonly caption: string;
  readonly onChanged: (endpoint: Endpoint) => void;
}) {
  const id = useId();
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const names = Object.keys(endpoint[field]).sort();

  const change = async (patch: Record<string, unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      onChanged(await patchEndpoint(api, endpoint.id, { [field]: patch }));
      setName('');
      setValue('');
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };
  const set = (event: FormEvent) => {
    event.preventDefault();
    if (name.trim() !== '') void change({ [name.trim()]: valueOfText(value) });
  };

  return (
    <section className="card panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{caption}</h2>
      <JsonTable value={endpoint[field]} caption={caption} />
      <form className="inline-form" onSubmit={set} aria-label={`Change ${caption.toLowerCase()}`}>
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} list={`${id}-names`} spellCheck={false} required />
          <datalist id={`${id}-names`}>
            {names.map((known) => (
              <option key={known} value={known} />
            ))}
          </datalist>
        </div>
        <div className="field">
          <label htmlFor={`${id}-value`}>Value</label>
          <input id={`${id}-value`} value={value} onChange={(event) => setValue(event.target.value)} placeholder="JSON or text" spellCheck={false} />
        </div>
        <span className="button-row">
          <button type="submit" className="button" disabled={busy}>
            Set
          </button>
          <button type="button" className="button button-quiet" disabled={busy || !names.includes(name.trim())} onClick={() => void change({ [name.trim()]: null })}>
            Remove
          </button>
        </span>
      </form>
      <ErrorMessage message={error} />
    </section>
  );
}
