import { DateTime } from '../components/date-time';
import { count, duration, type EventsView, type TriggersView } from './diagnostics-types';

/** The event bus of this node: the backlog, how far the consumers are behind, each consumer's cursor. */
export function EventsCard({ view }: { readonly view: EventsView }) {
  const { backlog, lag } = view;
  return (
    <>
      <ul className="stats super-stats" aria-label="Event bus">
        <li className="stat">
          <span className="stat-value">{count(lag.pending)}</span>
          <span className="stat-label">events not yet handled</span>
        </li>
        <li className="stat">
          <span className="stat-value">{count(backlog.inMemory)}</span>
          <span className="stat-label">waiting in memory{backlog.inStoreOnly ? ' (more in the database only)' : ''}</span>
        </li>
        <li className="stat">
          <span className="stat-value">{duration(lag.oldestPendingAgeMs)}</span>
          <span className="stat-label">age of the oldest not handled</span>
        </li>
      </ul>
      <p className="muted">
        Node <span className="mono">{view.nodeId}</span>: last event {count(lag.lastSeq)}, handled through {count(lag.handledThrough)}.
      </p>
      <div className="table-scroll">
        <table className="table table-compact" aria-label="Consumers">
          <thead>
            <tr>
              <th scope="col">Consumer</th>
              <th scope="col">Handled through</th>
              <th scope="col">Behind</th>
            </tr>
          </thead>
          <tbody>
            {lag.cursors.map((cursor) => (
              <tr key={cursor.name}>
                <td className="mono">{cursor.name}</td>
                <td>{count(cursor.handledThrough)}</td>
                <td>{count(Math.max(0, lag.lastSeq - cursor.handledThrough))}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The script workers and, over the newest executions, the slowest runs and the triggers failing most. */
export function TriggersCard({ view }: { readonly view: TriggersView }) {
  const { workers, recent } = view;
  return (
    <>
      <ul className="stats super-stats" aria-label="Script workers">
        <li className="stat">
          <span className="stat-value">
            {count(workers.count)} of {count(workers.configured)}
          </span>
          <span className="stat-label">workers started</span>
        </li>
        <li className="stat">
          <span className="stat-value">{count(workers.busy)}</span>
          <span className="stat-label">busy</span>
        </li>
        <li className="stat">
          <span className="stat-value">{count(workers.inFlight)}</span>
          <span className="stat-label">runs in flight</span>
        </li>
      </ul>
      <p className="muted">
        Over the newest {count(recent.runs)} runs{recent.since === null ? '' : ' since '}
        {recent.since === null ? null : <DateTime value={recent.since} />}.
      </p>
      <div className="table-scroll">
        <table className="table table-compact" aria-label="Slowest scripts">
          <caption className="super-caption">Slowest scripts</caption>
          <thead>
            <tr>
              <th scope="col">Duration</th>
              <th scope="col">Trigger</th>
              <th scope="col">Account</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {recent.slowest.length === 0 ? (
              <tr>
                <td colSpan={5} className="muted">
                  No runs yet.
                </td>
              </tr>
            ) : (
              recent.slowest.map((run) => (
                <tr key={`${run.triggerId}-${run.startedAt}-${run.durationMs}`}>
                  <td className="nowrap">{duration(run.durationMs)}</td>
                  <td>
                    {run.triggerName ?? (
                      <>
                        <span className="mono">{run.triggerId}</span> <span className="muted">(deleted)</span>
                      </>
                    )}
                  </td>
                  <td>{run.accountName ?? <span className="mono">{run.accountId}</span>}</td>
                  <td>{run.status}</td>
                  <td>
                    <DateTime value={run.startedAt} />
                  </td>
                </tr>
              ))
            )}
          </tbody>
        </table>
      </div>
      {recent.failures.length === 0 ? null : (
        <div className="table-scroll">
          <table className="table table-compact" aria-label="Failing triggers">
            <caption className="super-caption">Failing most</caption>
            <thead>
              <tr>
                <th scope="col">Trigger</th>
                <th scope="col">Account</th>
                <th scope="col">Failed runs</th>
              </tr>
            </thead>
            <tbody>
              {recent.failures.map((failure) => (
                <tr key={failure.triggerId}>
                  <td>{failure.triggerName ?? <span className="mono">{failure.triggerId}</span>}</td>
                  <td className="mono">{failure.accountId}</td>
                  <td>{count(failure.failed)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
