import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { saveCredentials } from '../session/credentials';
import { useSession } from '../session/session';
import type { SupportToken } from './account-status';

/**
 * A short-lived support token for an account (`POST /super/impersonate`, audited in both accounts), shown once.
 * **Open as this account** makes it this tab's session: the UI starts afresh as that account (the Super-Admin
 * signs in again afterwards).
 */
export function ImpersonationPanel({ accountId, name }: { readonly accountId: string; readonly name: string }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, run } = useAction();
  const [minutes, setMinutes] = useState('30');
  const [token, setToken] = useState<SupportToken | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const issued = await run(() => call(api.POST('/super/impersonate', { body: { accountId, minutes: Number(minutes) } })));
    setToken(issued);
  };

  return (
    <div className="super-action-form">
      <form className="form" aria-label={`Impersonate ${name}`} onSubmit={(event) => void submit(event)}>
        <label htmlFor={`${id}-minutes`}>Support token for {name}, valid for (minutes)</label>
        <input id={`${id}-minutes`} type="number" min={1} max={60} step={1} value={minutes} onChange={(event) => setMinutes(event.target.value)} />
        <p className="muted field-hint">An API token acting in the account, never a Super-Admin one. The account&apos;s own log records the access.</p>
        <ErrorMessage message={error} />
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Issuing…' : 'Issue support token'}
        </button>
      </form>
      {token === undefined ? null : (
        <div className="super-token" role="region" aria-label="Support token">
          <label htmlFor={`${id}-secret`}>Support token (shown this once)</label>
          <input id={`${id}-secret`} className="mono" readOnly value={token.token} onFocus={(event) => event.target.select()} />
          <p className="muted field-hint">
            Expires <DateTime value={token.expiresAt} />.
          </p>
          <button
            type="button"
            className="button"
            onClick={() => {
              // Stored as a sign-in stores a token, then the UI starts afresh with it: nothing of this
              // session's pages (the account switcher, who am I) stays to be asked with the new token.
              saveCredentials({ token: token.token, accountId: undefined });
              window.location.replace('#/');
              window.location.reload();
            }}
          >
            Open as this account
          </button>
        </div>
      )}
    </div>
  );
}
