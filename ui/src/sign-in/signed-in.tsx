import { useEffect } from 'react';
import { parseToken } from '../session/credentials';
import { useSignIn } from '../session/session';

/** Where the UI may go after an external sign-in: one of its own fragment paths. */
function safeReturn(path: string | null): string {
  return path !== null && /^\/(?![/\\])/.test(path) ? path : '/';
}

/**
 * `#/signed-in?token=UT:…&returnTo=…`, where the service sends the browser after an external sign-in: keeps
 * the token as a password sign-in does, then goes on with the token out of the address bar and the history.
 */
export function SignedIn({ query }: { readonly query: URLSearchParams }) {
  const { signIn } = useSignIn();
  const token = query.get('token');
  const returnTo = safeReturn(query.get('returnTo'));

  useEffect(() => {
    const credentials = token === null ? undefined : parseToken(token);
    if (credentials !== undefined) signIn({ token: credentials.token, accountId: undefined });
    window.location.replace(credentials === undefined ? '#/sign-in?error=IOTB_AUTH_TOKEN_INVALID' : `#${returnTo}`);
  }, [token, returnTo, signIn]);

  return (
    <main id="main" className="sign-in">
      <p className="muted">Signing in…</p>
    </main>
  );
}
