import type { FotaDevice, FotaJob } from './fota-types';

/** A campaign's state as a badge: running, finished or cancelled. */
export function JobState({ state }: { readonly state: FotaJob['state'] }) {
  return <span className={`job-state job-state-${state}`}>{state}</span>;
}

/** A device's outcome as a badge, or its step while it is not done. */
export function DeviceOutcome({ device }: { readonly device: FotaDevice }) {
  if (device.outcome === null) return <span className="job-state job-state-running">{device.step}</span>;
  return <span className={`job-state job-state-${device.outcome}`}>{device.outcome}</span>;
}
