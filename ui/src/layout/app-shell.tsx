import { useEffect, useRef, type ReactNode } from 'react';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { AccountSwitcher } from './account-switcher';
import { useIdentity } from './identity';
import { Navigation } from './navigation';
import { WhoAmI } from './who-am-i';

/** Header (account, who am I, sign-out), the sections' navigation and the page. */
export function AppShell({ path, children }: { readonly path: string; readonly children: ReactNode }) {
  const session = useSession();
  const identity = useIdentity(session);
  const main = useRef<HTMLElement>(null);
  const { signOut } = session;

  // A token that expired or was revoked ends the session; the sign-in page says why.
  useEffect(() => {
    if (identity.status === 401) void signOut(identity.error);
  }, [identity.status, identity.error, signOut]);

  // A new page moves the keyboard focus to it, as a page load would.
  const firstPath = useRef(path);
  useEffect(() => {
    if (path !== firstPath.current) main.current?.focus();
  }, [path]);

  return (
    <div className="shell">
      <a className="skip-link" href="#main" onClick={(event) => {
        event.preventDefault();
        main.current?.focus();
      }}>
        Skip to content
      </a>
      <header className="topbar">
        <a className="brand" href="#/">
          <img src="/favicon.svg" alt="" width="24" height="24" />
          IoT Bridge
        </a>
        <div className="topbar-session">
          {identity.data === undefined ? null : <AccountSwitcher homeAccountId={identity.data.whoAmI.tokenAccountId} path={path} />}
          {identity.data === undefined ? null : <WhoAmI identity={identity.data} />}
          <button type="button" className="button button-quiet" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      <Navigation path={path} superAdmin={identity.data?.whoAmI.superAdmin === true} />
      <main id="main" ref={main} tabIndex={-1}>
        {identity.status !== undefined && identity.status !== 401 ? <ErrorMessage message={identity.error} /> : null}
        {children}
      </main>
    </div>
  );
}
