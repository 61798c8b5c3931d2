import { useId, useState, type FormEvent } from 'react';
import { apiClient, call, messageOf } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { usePageTitle } from '../components/page-title';
import { useHashLocation } from '../router/hash-location';
import { parseToken, type Credentials } from '../session/credentials';
import { useSignIn } from '../session/session';
import { ExternalSignIn, externalRefusal } from './external-sign-in';

/** Checks the token with GET /auth/whoami before keeping it, so a wrong one fails here with the API's message. */
async function verified(credentials: Credentials): Promise<Credentials> {
  await call(apiClient(credentials.token, credentials.accountId).GET('/auth/whoami'));
  return credentials;
}

function PasswordForm({ onSignedIn }: { readonly onSignedIn: (credentials: Credentials) => void }) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const id = useId();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const accountId = formText(form, 'accountId').trim();
    setBusy(true);
    setError(undefined);
    try {
      const issued = await call(
        apiClient().POST('/auth/login', {
          body: { email: formText(form, 'email'), password: formText(form, 'password'), ...(accountId === '' ? {} : { accountId }) },
        }),
      );
      onSignedIn(await verified({ token: issued.token, accountId: undefined }));
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Sign in</h2>
      <label htmlFor={`${id}-email`}>Email</label>
      <input id={`${id}-email`} name="email" type="email" autoComplete="username" required />
      <label htmlFor={`${id}-password`}>Password</label>
      <input id={`${id}-password`} name="password" type="password" autoComplete="current-password" required />
      <details>
        <summary>Account ID (only when your email is in several accounts)</summary>
        <label htmlFor={`${id}-account`}>Account ID</label>
        <input id={`${id}-account`} name="accountId" autoComplete="off" spellCheck={false} />
      </details>
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

function TokenForm({ onSignedIn }: { readonly onSignedIn: (credentials: Credentials) => void }) {
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const id = useId();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const credentials = parseToken(formText(new FormData(event.currentTarget), 'token'));
    if (credentials === undefined) {
      setError('A token starts with AT: or UT: and may end with :<accountId>.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await verified(credentials));
    } catch (failure) {
      setError(messageOf(failure));
      setBusy(false);
    }
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Use a token</h2>
      <p className="muted">An API token (AT:…) or a user token (UT:…), optionally followed by :&lt;accountId&gt; to act in a sub-account.</p>
      <label htmlFor={`${id}-token`}>Token</label>
      <input id={`${id}-token`} name="token" type="password" autoComplete="off" spellCheck={false} required />
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Checking…' : 'Use token'}
      </button>
    </form>
  );
}

/**
 * Email and password (a UT: user token from POST /auth/login), a pasted token, or the operator's identity
 * provider when configured; kept for this tab only. `#/sign-in?error=<code>` is an external sign-in refused.
 */
export function SignInPage() {
  const { signIn, endedBecause } = useSignIn();
  const refused = useHashLocation().query.get('error');
  usePageTitle('Sign in');
  return (
    <main id="main" className="sign-in">
      <header className="sign-in-header">
        <img src="/favicon.svg" alt="" width="40" height="40" />
        <h1>IoT Bridge</h1>
      </header>
      {endedBecause === undefined ? null : <p className="notice">Your session ended: {endedBecause}</p>}
      <ErrorMessage message={refused === null ? undefined : externalRefusal(refused)} />
      <div className="sign-in-forms">
        <ExternalSignIn />
        <PasswordForm onSignedIn={signIn} />
        <TokenForm onSignedIn={signIn} />
      </div>
      <p className="muted sign-in-footer">
        The token is kept in this browser tab only. The API: <a href="/docs">/docs</a>
      </p>
    </main>
  );
}
