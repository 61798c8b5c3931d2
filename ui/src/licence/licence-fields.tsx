import { DateTime } from '../components/date-time';
import type { LicenceStatus } from './licence-types';

const COUNT = new Intl.NumberFormat('en');

/** The state and, for a Super-Admin, the installed licence: licensee, id, dates and limits. */
export function LicenceFields({ status }: { readonly status: LicenceStatus }) {
  const { limits } = status;
  return (
    <dl className="fields lic-fields" aria-label="Licence">
      <dt>State</dt>
      <dd>
        <span className={`lic-state lic-state-${status.state}`} data-testid="licence-state">
          {status.state}
        </span>
      </dd>
      <dt>Required</dt>
      <dd>{status.required ? 'yes (IOTBRIDGE_LICENSING=true)' : 'no'}</dd>
      {status.graceEndsAt === undefined ? null : (
        <>
          <dt>Grace period ends</dt>
          <dd>
            <DateTime value={status.graceEndsAt} />
          </dd>
        </>
      )}
      <dt>Licensee</dt>
      <dd>{status.licensee ?? <span className="muted">no licence installed</span>}</dd>
      {status.id === undefined ? null : (
        <>
          <dt>Licence id</dt>
          <dd className="mono">{status.id}</dd>
          <dt>Issued</dt>
          <dd>
            <DateTime value={status.issuedAt} />
          </dd>
          <dt>Expires</dt>
          <dd>
            <DateTime value={status.expiresAt} />
          </dd>
          <dt>Endpoints at most</dt>
          <dd>{limits?.maxEndpoints === undefined ? <span className="muted">no limit</span> : COUNT.format(limits.maxEndpoints)}</dd>
          <dt>Features</dt>
          <dd>{limits?.features === undefined || limits.features.length === 0 ? <span className="muted">none</span> : limits.features.join(', ')}</dd>
        </>
      )}
    </dl>
  );
}
