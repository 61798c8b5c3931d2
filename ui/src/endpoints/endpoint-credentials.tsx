import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';

/**
 * The device's log-in password (`/endpoints/{id}/credentials`): whether one is set, never the password; set a
 * chosen one, generate one (the secret is shown this once, with a copy button) or remove it.
 */
export function EndpointCredentials({ api, endpointId }: { readonly api: ApiClient; readonly endpointId: string }) {
  const id = useId();
  const load = useCallback(() => call(api.GET('/endpoints/{ref}/credentials', { params: { path: { ref: endpointId } } })), [api, endpointId]);
  const current = useResource(load);
  const [password, setPassword] = useState('');
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const [note, setNote] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const params = { params: { path: { ref: endpointId } } };

  const run = async (work: () => Promise<string>) => {
    setBusy(true);
    setError(undefined);
    setNote(undefined);
    setSecret(undefined);
    try {
      setNote(await work());
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    } finally {
      setBusy(false);
      current.reload();
    }
  };
  const choose = async (event: FormEvent) => {
    event.preventDefault();
    const set = await run(async () => {
      await call(api.PUT('/endpoints/{ref}/credentials', { ...params, body: { password } }));
      return 'The password is set.';
    });
    if (set) setPassword('');
  };
  const generate = () =>
    void run(async () => {
      const generated = await call(api.PUT('/endpoints/{ref}/credentials', { ...params, body: { generate: true } }));
      if (generated === undefined) throw new Error('The service answered no password');
      setSecret(generated.password);
      return 'A password was generated. Copy it now: it is not shown again.';
    });
  const remove = () =>
    void run(async () => {
      await call(api.DELETE('/endpoints/{ref}/credentials', params));
      return 'The password is removed.';
    });
  const copy = (text: string) => {
    navigator.clipboard.writeText(text).then(
      () => setNote('Copied to the clipboard. It is not shown again.'),
      (failure: unknown) => setError(`Could not copy: ${messageOf(failure)}; select the text instead.`),
    );
  };

  return (
    <section className="card panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Credentials</h2>
      <ErrorMessage message={current.error} />
      {current.data === undefined ? (
        current.error === undefined ? <Loading what="the credentials" /> : null
      ) : (
        <p data-testid="credentials-state">
          {current.data.passwordSet ? (
            <>
              A {current.data.kind ?? ''} password is set{current.data.updatedAt === undefined ? null : <> (<DateTime value={current.data.updatedAt} />)</>}.
            </>
          ) : (
            'No password is set.'
          )}
        </p>
      )}
      <p className="muted field-hint">The device logs in with its key and this password (MQTT). The service keeps only a hash.</p>
      {note === undefined ? null : (
        <p className="notice" role="status">
          {note}
        </p>
      )}
      {secret === undefined ? null : (
        <div className="secret">
          <code data-testid="generated-secret">{secret}</code>
          <button type="button" className="button button-small" onClick={() => copy(secret)}>
            Copy
          </button>
        </div>
      )}
      <form className="inline-form" onSubmit={(event) => void choose(event)} aria-label="Set a password">
        <div className="field">
          <label htmlFor={`${id}-password`}>New password</label>
          <input id={`${id}-password`} type="password" autoComplete="new-password" value={password} onChange={(event) => setPassword(event.target.value)} required />
        </div>
        <button type="submit" className="button" disabled={busy}>
          Set password
        </button>
      </form>
      <div className="button-row">
        <button type="button" className="button button-quiet" disabled={busy} onClick={generate}>
          Generate password
        </button>
        {current.data?.passwordSet ? (
          <button type="button" className="button button-quiet" disabled={busy} onClick={remove}>
            Remove password
          </button>
        ) : null}
      </div>
      <ErrorMessage message={error} />
    </section>
  );
}
