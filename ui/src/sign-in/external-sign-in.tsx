import { useEffect, useId, useState } from 'react';
import { apiClient, call } from '../api/client';
import { useHashLocation } from '../router/hash-location';

/** What the service's `/#/sign-in?error=<code>` means, in words for the person who just tried. */
const REFUSALS: Readonly<Record<string, string>> = {
  IOTB_AUTH_OIDC_NO_ACCOUNT: 'You were signed in by your identity provider, but your e-mail domain or organization is not linked to an account here. Ask the operator of this service.',
  IOTB_AUTH_OIDC_STATE: 'That sign-in took too long or was already used. Please try again.',
  IOTB_AUTH_OIDC_PROVIDER: 'The identity provider did not complete the sign-in. Try again, or ask the operator of this service.',
};

export function externalRefusal(code: string): string {
  return REFUSALS[code] ?? `External sign-in failed (${code}).`;
}

/** The page the person opened (`#/endpoints?tag=a`), to come back to after the provider; none for the sign-in pages. */
function returnPath(path: string, query: URLSearchParams): string | undefined {
  if (path === '/' || path === '/sign-in' || path === '/signed-in') return undefined;
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** "Sign in with <provider>" when the service has external sign-in (GET /auth/oidc); nothing otherwise. */
export function ExternalSignIn() {
  const [name, setName] = useState<string | undefined>(undefined);
  const { path, query } = useHashLocation();
  const returnTo = returnPath(path, query);
  const id = useId();

  useEffect(() => {
    let current = true;
    call(apiClient().GET('/auth/oidc')).then(
      (state) => current && state.enabled && setName(state.name ?? 'single sign-on'),
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, []);

  if (name === undefined) return null;
  return (
    <section className="card form" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Single sign-on</h2>
      <p className="muted">With your organization&apos;s account; a user is created here on your first sign-in.</p>
      {/* A full navigation: the service sends the browser on to the provider and back (GET /auth/oidc/login). */}
      <a className="button" href={returnTo === undefined ? '/auth/oidc/login' : `/auth/oidc/login?${new URLSearchParams({ returnTo }).toString()}`}>
        Sign in with {name}
      </a>
    </section>
  );
}
