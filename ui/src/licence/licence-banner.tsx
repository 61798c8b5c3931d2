import { DateTime } from '../components/date-time';
import type { LicenceStatus } from './licence-types';

/** What the state means for the installation, loud when triggers are about to stop or have stopped. */
export function LicenceBanner({ status }: { readonly status: LicenceStatus }) {
  switch (status.state) {
    case 'off':
      return <p className="notice">Licensing is off (IOTBRIDGE_LICENSING is not true): no licence is needed and nothing is limited.</p>;
    case 'valid':
      return (
        <p className="notice lic-valid">
          A valid licence is installed{status.expiresAt === undefined ? '' : ', until '}
          {status.expiresAt === undefined ? null : <DateTime value={status.expiresAt} />}.
        </p>
      );
    case 'grace':
      return (
        <div className="lic-banner lic-grace" role="alert">
          <strong>Grace period: no valid licence is installed.</strong> Triggers run until <DateTime value={status.graceEndsAt} />; install a licence before then.
          {status.reason === undefined ? null : <p className="lic-reason">{status.reason}</p>}
        </div>
      );
    case 'expired':
      return (
        <div className="lic-banner lic-expired" role="alert">
          <strong>The licence has expired: triggers do not run.</strong> Events are still stored. Install a valid licence to run triggers again.
          {status.reason === undefined ? null : <p className="lic-reason">{status.reason}</p>}
        </div>
      );
  }
}
