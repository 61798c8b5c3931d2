import { useId, useState, type FormEvent } from 'react';
import { call, messageOf } from '../api/client';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { useSession } from '../session/session';
import type { FileLink } from './file-api';

/** The longest a link may live (30 days), as the API takes it. */
const MAX_TTL_SECONDS = 30 * 24 * 3600;

/**
 * Download links for devices (`POST /file/{name}/links`): a token-free URL per protocol, shown once, as the API
 * keeps only the token's hash. The links made on this page can be revoked here; an older one by its token.
 */
export function FileLinks({ name }: { readonly name: string }) {
  const id = useId();
  const { api } = useSession();
  const [links, setLinks] = useState<readonly FileLink[]>([]);
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const create = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const ttl = Number(formText(form, 'ttlSeconds'));
    setBusy('create');
    setError(undefined);
    setNotice(undefined);
    try {
      const link = await call(
        api.POST('/file/{name}/links', {
          params: { path: { name } },
          body: { ttlSeconds: ttl, appendFileName: form.get('appendFileName') !== null, includePortInUrl: form.get('includePortInUrl') !== null },
        }),
      );
      setLinks((current) => [link, ...current]);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(undefined);
    }
  };

  const revoke = async (token: string) => {
    setBusy(token);
    setError(undefined);
    setNotice(undefined);
    try {
      await call(api.DELETE('/file/{name}/links/{token}', { params: { path: { name, token } } }));
      setLinks((current) => current.filter((link) => link.token !== token));
      setNotice('Revoked the link: it no longer works.');
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    } finally {
      setBusy(undefined);
    }
  };

  const revokeByToken = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    const token = formText(new FormData(formElement), 'token').trim();
    if (token !== '' && (await revoke(token))) formElement.reset();
  };

  return (
    <section className="file-links" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Download links for devices</h2>
      <p className="muted">Devices fetch the file through a link over HTTP, CoAP or CoAPS without a token until it expires. A link serves this content only: once the file is replaced or deleted it stops working.</p>
      <form className="filter-form" onSubmit={(event) => void create(event)} aria-label="New download link">
        <div className="field">
          <label htmlFor={`${id}-ttl`}>Valid for (seconds)</label>
          <input id={`${id}-ttl`} name="ttlSeconds" type="number" min={1} max={MAX_TTL_SECONDS} defaultValue={3600} required />
        </div>
        <div className="checks">
          <label>
            <input type="checkbox" name="appendFileName" /> Append the file name
          </label>
          <label>
            <input type="checkbox" name="includePortInUrl" /> Write the port even when default
          </label>
        </div>
        <div className="filter-actions">
          <button type="submit" className="button" disabled={busy !== undefined}>
            {busy === 'create' ? 'Creating…' : 'Create link'}
          </button>
        </div>
      </form>
      <ErrorMessage message={error} />
      {notice === undefined ? null : (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {links.map((link) => (
        <div key={link.token} className="card link-card" role="group" aria-label="New download link">
          <p className="field-hint">
            Copy these URLs now: the token is not shown again. Expires <DateTime value={link.expiresAt} />.
          </p>
          <dl className="fields">
            <dt>HTTP</dt>
            <dd className="mono link-url" data-testid="link-http">
              {link.urls.http}
            </dd>
            <dt>CoAP</dt>
            <dd className="mono link-url">{link.urls.coap}</dd>
            {link.urls.coaps === undefined ? null : (
              <>
                <dt>CoAPS</dt>
                <dd className="mono link-url">{link.urls.coaps}</dd>
              </>
            )}
            <dt>Token</dt>
            <dd className="mono link-url">{link.token}</dd>
          </dl>
          <button type="button" className="button button-quiet" onClick={() => void revoke(link.token)} disabled={busy !== undefined}>
            {busy === link.token ? 'Revoking…' : 'Revoke'}
          </button>
        </div>
      ))}
      <form className="filter-form" onSubmit={(event) => void revokeByToken(event)} aria-label="Revoke a link">
        <div className="field">
          <label htmlFor={`${id}-token`}>Revoke an earlier link by its token</label>
          <input id={`${id}-token`} name="token" spellCheck={false} autoComplete="off" />
        </div>
        <div className="filter-actions">
          <button type="submit" className="button button-quiet" disabled={busy !== undefined}>
            Revoke
          </button>
        </div>
      </form>
    </section>
  );
}
