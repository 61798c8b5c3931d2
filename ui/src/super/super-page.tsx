import { useCallback } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href } from '../router/hash-location';
import { useSession } from '../session/session';
import { offsetParam } from '../users/use-paged';
import { AccountTable } from './account-table';
import { CertificateRotation } from './certificate-rotation';
import { DiagnosticsPanel } from './diagnostics-panel';
import { EndpointLookup } from './endpoint-lookup';
import { SuperTabs } from './super-tabs';
import './super.css';

const PAGE_SIZE = 25;

/**
 * `#/super`: the platform administrators' area. **Accounts**: every account of the platform (GET /super/accounts)
 * with Suspend / Resume, Limits and Impersonate per row, finding an endpoint by key in any account, the CoAPS
 * certificate's rotation. **Diagnostics** (`?view=diagnostics`): the event bus, script workers, devices and
 * storage. Anyone else sees the API's 403.
 */
export function SuperPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Super-Admin');
  const view = search.get('view') === 'diagnostics' ? 'diagnostics' : 'accounts';
  return (
    <section aria-labelledby="super-title">
      <h1 id="super-title">Super-Admin</h1>
      <SuperTabs current={view} />
      {view === 'diagnostics' ? <DiagnosticsPanel /> : <AccountsView offset={offsetParam(search, 'offset')} />}
    </section>
  );
}

function AccountsView({ offset }: { readonly offset: number }) {
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/super/accounts', { params: { query: { limit: PAGE_SIZE, offset } } })), [api, offset]);
  const accounts = useResource(load);

  return (
    <>
      <ErrorMessage message={accounts.error} />
      {accounts.data === undefined ? (
        accounts.error === undefined ? <Loading what="accounts" /> : null
      ) : (
        <>
          <div className="super-tools">
            <EndpointLookup />
            <CertificateRotation api={api} />
            <p className="super-link">
              <a href={href('/super/oidc')}>External sign-in mapping</a>: which account a person signing in with the identity provider gets.
            </p>
          </div>
          <h2>Accounts</h2>
          <p className="muted">Every account below the one acted in: the whole platform from the root account.</p>
          <Pager total={accounts.data.total} offset={accounts.data.offset} limit={PAGE_SIZE} noun="accounts" hrefAt={(at) => href('/super', { offset: at === 0 ? undefined : at })} />
          {accounts.data.items.length === 0 ? <p className="muted">No accounts below this one.</p> : <AccountTable accounts={accounts.data.items} />}
        </>
      )}
    </>
  );
}
