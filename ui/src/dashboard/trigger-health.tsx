import type { ApiData } from '../api/client';
import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { EXECUTIONS_PATH, triggerPath } from '../router/routes';

export type ExecutionCounts = ApiData<'/metrics/executions'>;
export type FailedExecution = ApiData<'/executions'>['items'][number];

const NUMBER = new Intl.NumberFormat('en');

/** Trigger runs and failures in the last hour and day; the failures link to the executions log filtered by them. */
export function TriggerRuns({ hour, day }: { readonly hour: ExecutionCounts; readonly day: ExecutionCounts }) {
  return (
    <section className="card dashboard-tile" aria-labelledby="runs-title">
      <h2 id="runs-title">Trigger runs</h2>
      <div className="table-scroll">
        <table className="table table-compact runs-table">
          <thead>
            <tr>
              <th scope="col">Period</th>
              <th scope="col">Runs</th>
              <th scope="col">Failed</th>
            </tr>
          </thead>
          <tbody>
            {[
              ['Last hour', hour],
              ['Last 24 hours', day],
            ].map(([label, counts]) => {
              const { runs, failed } = counts as ExecutionCounts;
              return (
                <tr key={label as string}>
                  <th scope="row">{label as string}</th>
                  <td>
                    <a href={href(EXECUTIONS_PATH)}>{NUMBER.format(runs)}</a>
                  </td>
                  <td>
                    <a className={failed > 0 ? 'failed-count' : undefined} href={href(EXECUTIONS_PATH, { status: 'failed' })}>
                      {NUMBER.format(failed)}
                    </a>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** The newest failed executions: when, which trigger (to its editor and its executions), and the error. */
export function RecentErrors({ failures, names }: { readonly failures: readonly FailedExecution[]; readonly names: ReadonlyMap<string, string> }) {
  return (
    <section className="card dashboard-tile dashboard-wide" aria-labelledby="errors-title">
      <h2 id="errors-title">Recent errors</h2>
      {failures.length === 0 ? (
        <p className="muted">No trigger run has failed.</p>
      ) : (
        <div className="table-scroll">
          <table className="table table-compact" aria-labelledby="errors-title">
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Trigger</th>
                <th scope="col">Event</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {failures.map((execution) => (
                <tr key={execution.id}>
                  <td className="nowrap">
                    <DateTime value={execution.startedAt} />
                  </td>
                  <td>
                    <a href={href(triggerPath(execution.triggerId))}>{names.get(execution.triggerId) ?? execution.triggerId}</a>
                    <br />
                    <a className="muted-link" href={href(EXECUTIONS_PATH, { triggerId: execution.triggerId })}>
                      its executions
                    </a>
                  </td>
                  <td className="mono">{execution.eventType}</td>
                  <td className="error-text">
                    {execution.error ?? 'failed'}
                    {execution.line === null ? null : <span className="muted"> (line {execution.line})</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p>
        <a href={href(EXECUTIONS_PATH, { status: 'failed' })}>All failed executions</a>
      </p>
    </section>
  );
}
