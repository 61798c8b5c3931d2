import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { EMPTY_MAPPING, type MappingBody, type MappingView } from './oidc-mapping-types';

/**
 * The mapping as JSON text: the page checks only that it parses; every other check (keys, domains, accounts,
 * `superAdmin` outside the root account) is the API's, and its message is shown. `PUT` replaces the whole mapping.
 */
export function OidcMappingEditor({ view, onSaved }: { readonly view: MappingView; readonly onSaved: (view: MappingView) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [text, setText] = useState(() => JSON.stringify(view.mapping ?? EMPTY_MAPPING, null, 2));
  const [saved, setSaved] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setSaved(false);
    let body: MappingBody;
    try {
      body = JSON.parse(text) as MappingBody;
    } catch (failure) {
      setError(`The mapping is not JSON: ${failure instanceof Error ? failure.message : String(failure)}`);
      return;
    }
    const next = await run(() => call(api.PUT('/auth/oidc/mapping', { body })));
    if (next === undefined) return;
    setSaved(true);
    setText(JSON.stringify(next.mapping ?? EMPTY_MAPPING, null, 2));
    onSaved(next);
  };

  if (view.source === 'file') {
    return (
      <p className="notice">
        The mapping comes from the file named by <span className="mono">IOTBRIDGE_OIDC_MAPPING</span>: edit the file and restart the service to change it.
      </p>
    );
  }
  return (
    <form className="card form" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Edit the mapping</h2>
      <label htmlFor={`${id}-text`}>Mapping (JSON)</label>
      <textarea id={`${id}-text`} className="mono super-mapping-text" rows={12} spellCheck={false} value={text} onChange={(event) => setText(event.target.value)} aria-describedby={`${id}-hint`} />
      <p id={`${id}-hint`} className="muted field-hint super-mapping-hint">
        <span className="mono">{'{"mode":"domain","domains":{"example.com":{"accountId":"…"}}}'}</span> or{' '}
        <span className="mono">{'{"mode":"organization","claim":"groups","organizations":{"acme":{"accountId":"…"}}}'}</span>;{' '}
        <span className="mono">{'"superAdmin": true'}</span> only for the root account.
      </p>
      <ErrorMessage message={error} />
      {saved ? (
        <p className="notice" role="status">
          The mapping was saved.
        </p>
      ) : null}
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Saving…' : 'Save mapping'}
      </button>
    </form>
  );
}
