import { DateTime } from '../components/date-time';
import { eventPath } from '../router/routes';
import { href } from '../router/hash-location';
import type { Execution } from './trigger-types';

/** One execution's trace: status, error with its line, duration, log lines, context and groups. */
export function ExecutionTrace({ execution, reply }: { readonly execution: Execution; readonly reply?: { readonly replied: boolean; readonly value: unknown } }) {
  const failed = execution.status === 'failed';
  return (
    <div className="trg-execution-trace">
      <dl className="fields">
        <dt>Status</dt>
        <dd>
          <span className={`state ${failed ? 'state-unavailable' : 'state-connected'}`}>{execution.status}</span>
          {execution.test ? <span className="badge trg-execution-test">test</span> : null}
        </dd>
        <dt>Duration</dt>
        <dd>{execution.durationMs.toFixed(1)} ms</dd>
        <dt>Started</dt>
        <dd>
          <DateTime value={execution.startedAt} />
        </dd>
        <dt>Event</dt>
        <dd>
          <span className="mono">{execution.eventType}</span> · <a href={href(eventPath(execution.eventId))}>{execution.eventId}</a>
        </dd>
        {reply === undefined ? null : (
          <>
            <dt>Reply</dt>
            <dd className="mono">{reply.replied ? JSON.stringify(reply.value) : <span className="muted">none (the script did not call trigger.reply)</span>}</dd>
          </>
        )}
        {execution.groups.length === 0 ? null : (
          <>
            <dt>Groups</dt>
            <dd className="mono">{execution.groups.join(', ')}</dd>
          </>
        )}
      </dl>
      {execution.error === null ? null : (
        <p className="trg-execution-error mono">
          {execution.line === null ? 'Error' : `Error at line ${execution.line}`}: {execution.error}
        </p>
      )}
      <h3 className="trg-trace-heading">Log</h3>
      {execution.logs.length === 0 ? (
        <p className="muted">No log lines.</p>
      ) : (
        <ol className="trg-execution-logs mono" aria-label="Log lines">
          {execution.logs.map((line, index) => (
            <li key={index}>{line}</li>
          ))}
        </ol>
      )}
      {Object.keys(execution.context).length === 0 ? null : (
        <>
          <h3 className="trg-trace-heading">Context</h3>
          <pre className="trg-execution-context mono">{JSON.stringify(execution.context, null, 2)}</pre>
        </>
      )}
    </div>
  );
}
