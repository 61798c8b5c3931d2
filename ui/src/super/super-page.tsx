import { useCallback, useState } from 'react';
import { call, type ApiClient } from '../api/client';
import type { paths } from '../api/schema';
import { useResource } from '../api/use-resource';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href } from '../router/hash-location';
import { useSession } from '../session/session';
import { offsetParam } from '../users/use-paged';
import { AccountTable } from './account-table';
import './super.css';

const PAGE_SIZE = 25;

type Rotation = paths['/coaps/certificate/rotate']['post']['responses'][200]['content']['application/json'];

/**
 * `#/super`: the platform administrators' area. What `/super/…` offers: every account of the platform
 * (GET /super/accounts), and the CoAPS certificate's rotation. Anyone else sees the API's 403.
 */
export function SuperPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Super-Admin');
  const { api } = useSession();
  const offset = offsetParam(search, 'offset');
  const load = useCallback(() => call(api.GET('/super/accounts', { params: { query: { limit: PAGE_SIZE, offset } } })), [api, offset]);
  const accounts = useResource(load);

  return (
    <section aria-labelledby="super-title">
      <h1 id="super-title">Super-Admin</h1>
      <ErrorMessage message={accounts.error} />
      {accounts.data === undefined ? (
        accounts.error === undefined ? <Loading what="accounts" /> : null
      ) : (
        <div className="split">
          <div className="split-main">
            <h2>Accounts</h2>
            <p className="muted">Every account below the one acted in: the whole platform from the root account.</p>
            <Pager total={accounts.data.total} offset={accounts.data.offset} limit={PAGE_SIZE} noun="accounts" hrefAt={(at) => href('/super', { offset: at === 0 ? undefined : at })} />
            {accounts.data.items.length === 0 ? <p className="muted">No accounts below this one.</p> : <AccountTable accounts={accounts.data.items} />}
          </div>
          <div className="split-side">
            <CertificateRotation api={api} />
          </div>
        </div>
      )}
    </section>
  );
}

function CertificateRotation({ api }: { readonly api: ApiClient }) {
  const [rotated, setRotated] = useState<Rotation | undefined>(undefined);
  return (
    <div className="card super-card" role="region" aria-labelledby="rotate-title">
      <h2 id="rotate-title">CoAPS server certificate</h2>
      <p className="muted">
        Makes a new self-signed certificate (or re-reads the supplied files), used from the next DTLS handshake without a restart. Devices that pin the old certificate
        are refused until they get the new one (<code>GET /coaps/certificate</code>).
      </p>
      <ConfirmButton
        label="Rotate certificate"
        busyLabel="Rotating…"
        question="Rotate the CoAPS certificate for every account now?"
        onConfirm={async () => {
          setRotated(await call(api.POST('/coaps/certificate/rotate')));
        }}
      />
      {rotated === undefined ? null : (
        <div role="status">
          <p className="notice">The certificate was rotated.</p>
          <dl className="fields super-certificate">
            <dt>SHA-256</dt>
            <dd className="mono">{rotated.fingerprintSha256}</dd>
            <dt>Valid until</dt>
            <dd>
              <DateTime value={rotated.notAfter} />
            </dd>
            <dt>Source</dt>
            <dd>{rotated.source}</dd>
          </dl>
        </div>
      )}
    </div>
  );
}
