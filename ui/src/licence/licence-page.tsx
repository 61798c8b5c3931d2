import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { useSession } from '../session/session';
import { LicenceBanner } from './licence-banner';
import { LicenceFields } from './licence-fields';
import { LicenceForm } from './licence-form';
import type { LicenceStatus } from './licence-types';
import './licence.css';

/**
 * `#/licence` (in the navigation for Super-Admins): the installation's licence state (GET /licence) with a
 * banner in grace or once expired, and the form that installs a licence (PUT /licence).
 */
export function LicencePage() {
  usePageTitle('Licence');
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/licence')), [api]);
  const loaded = useResource(load);
  // The answer of an install is the new state: shown at once, without asking again.
  const [installed, setInstalled] = useState<LicenceStatus | undefined>(undefined);
  const status = installed ?? loaded.data;

  return (
    <section aria-labelledby="licence-title">
      <h1 id="licence-title">Licence</h1>
      <ErrorMessage message={loaded.error} />
      {status === undefined ? (
        loaded.error === undefined ? <Loading what="the licence" /> : null
      ) : (
        <>
          <LicenceBanner status={status} />
          <div className="split">
            <div className="split-main">
              <LicenceFields status={status} />
            </div>
            <div className="split-side">
              <LicenceForm onInstalled={setInstalled} />
            </div>
          </div>
        </>
      )}
    </section>
  );
}
