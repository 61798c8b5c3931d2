import { useCallback, useState } from 'react';
import { ApiError, call, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { useSession } from '../session/session';
import { OidcMappingEditor } from './oidc-mapping-editor';
import { OidcMappingTable } from './oidc-mapping-table';
import type { MappingView } from './oidc-mapping-types';
import './super.css';

/** The mapping, or `off` when the service has no external sign-in (404 IOTB_AUTH_OIDC_OFF). */
async function loadMapping(api: ApiClient): Promise<MappingView | 'off'> {
  try {
    return await call(api.GET('/auth/oidc/mapping'));
  } catch (error) {
    if (error instanceof ApiError && error.code === 'IOTB_AUTH_OIDC_OFF') return 'off';
    throw error;
  }
}

/**
 * `#/super/oidc`: which account (and role) a person signing in with the organization's identity provider gets
 * (GET/PUT /auth/oidc/mapping, Super-Admin only; docs/admin.md "External sign-in (OIDC)").
 */
export function OidcMappingPage() {
  usePageTitle('External sign-in');
  const { api } = useSession();
  const load = useCallback(() => loadMapping(api), [api]);
  const loaded = useResource(load);
  // A save answers the new mapping: shown at once.
  const [saved, setSaved] = useState<MappingView | undefined>(undefined);
  const view = saved ?? loaded.data;

  return (
    <section aria-labelledby="oidc-title">
      <p className="breadcrumb">
        <a href={href('/super')}>Super-Admin</a>
      </p>
      <h1 id="oidc-title">External sign-in</h1>
      <ErrorMessage message={loaded.error} />
      {view === undefined ? (
        loaded.error === undefined ? <Loading what="the sign-in mapping" /> : null
      ) : view === 'off' ? (
        <p className="notice" data-testid="oidc-off">
          External sign-in is not configured (IOTBRIDGE_OIDC_ISSUER).
        </p>
      ) : (
        // One above the other: the JSON needs the width a side column lacks.
        <div className="super-mapping">
          <h2>Mapping</h2>
          <OidcMappingTable view={view} />
          <OidcMappingEditor view={view} onSaved={setSaved} />
        </div>
      )}
    </section>
  );
}
