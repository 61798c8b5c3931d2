import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import type { ImportJob } from './imex-api';

const COUNT = new Intl.NumberFormat('en');

const STATE_TEXT: Record<ImportJob['state'], string> = { running: 'Running', done: 'Done', failed: 'Failed' };

/** The job's state and counts; while it runs, how many items were read so far. */
export function ImportJobView({ job }: { readonly job: ImportJob }) {
  const counts: readonly [string, number][] = [
    ['Processed', job.processed],
    ['Created', job.created],
    ['Updated', job.updated],
    ['Unchanged', job.unchanged],
    ['Refused', job.refusedCount],
  ];
  return (
    <section className="card imex-job" aria-labelledby="imex-job-title">
      <h2 id="imex-job-title">{job.dryRun ? 'Dry run' : 'Import job'}</h2>
      <p role="status" data-testid="imex-job-state">
        {STATE_TEXT[job.state]}
        {job.dryRun && job.state !== 'running' ? ': nothing was written, the counts say what an import would do.' : null}
      </p>
      {job.state === 'running' ? (
        <div className="imex-progress">
          <progress aria-label="Import progress" />
          <span className="muted">{COUNT.format(job.processed)} items read so far</span>
        </div>
      ) : null}
      <ul className="stats imex-counts" aria-label="Counts">
        {counts.map(([label, value]) => (
          <li key={label} className="stat">
            <span className="stat-value">{COUNT.format(value)}</span> <span className="stat-label">{label}</span>
          </li>
        ))}
      </ul>
      <p className="muted">
        Started <DateTime value={job.startedAt} />
        {job.finishedAt === null ? null : (
          <>
            , finished <DateTime value={job.finishedAt} />
          </>
        )}
        . Job <span className="mono">{job.jobId}</span>
      </p>
      <ErrorMessage message={job.error ?? undefined} />
      {job.refused.length === 0 ? null : <RefusalTable job={job} />}
    </section>
  );
}

/** What the import refused and why, the first 1,000 of them. */
function RefusalTable({ job }: { readonly job: ImportJob }) {
  return (
    <>
      <h3>Refused</h3>
      {job.refusedCount > job.refused.length ? (
        <p className="muted">
          The first {COUNT.format(job.refused.length)} of {COUNT.format(job.refusedCount)}.
        </p>
      ) : null}
      <div className="table-scroll">
        <table className="table table-compact" aria-label="Refused items">
          <thead>
            <tr>
              <th scope="col">Section</th>
              <th scope="col">Item</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {job.refused.map((refusal, index) => (
              // The same item may be refused twice (a key twice in the document): the position keeps rows apart.
              <tr key={`${index}:${refusal.section}:${refusal.item}`}>
                <td>{refusal.section}</td>
                <td className="mono">{refusal.item}</td>
                <td>{refusal.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
