import { finished, type FotaJob } from './fota-types';

/**
 * A campaign's devices as one bar: success, failed and aborted share of the total, with the counts in words
 * (the bar is decoration; the text is what screen readers read). Its widths are set through the CSSOM, which
 * the CSP's `style-src 'self'` allows (it forbids style attributes in markup, which React does not write).
 */
export function JobProgress({ job, compact = false }: { readonly job: FotaJob; readonly compact?: boolean }) {
  const { total, success, failed, aborted, running, pending } = job.counts;
  const share = (count: number) => (total === 0 ? 0 : (count / total) * 100);
  const done = finished(job);
  return (
    <div className={compact ? 'job-progress job-progress-compact' : 'job-progress'}>
      <progress className="visually-hidden" max={Math.max(total, 1)} value={done} aria-label="Devices done" />
      <div className="job-bar" aria-hidden="true">
        <span className="job-bar-success" style={{ width: `${share(success)}%` }} />
        <span className="job-bar-failed" style={{ width: `${share(failed)}%` }} />
        <span className="job-bar-aborted" style={{ width: `${share(aborted)}%` }} />
      </div>
      <p className="job-counts" data-testid="job-counts">
        {done} of {total} done: {success} success, {failed} failed, {aborted} aborted
        {compact ? '' : `; ${running} running, ${pending} pending`}
      </p>
    </div>
  );
}
