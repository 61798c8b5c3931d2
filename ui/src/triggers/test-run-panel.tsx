import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { ExecutionTrace } from './execution-trace';
import { sampleData, type DraftEvent, type DraftRun, type HistoryEvent, type TriggerWrite } from './trigger-types';

const PAST_EVENTS = 10;

function eventText(type: string): string {
  return JSON.stringify({ type, data: sampleData(type) }, null, 2);
}

/** The sample event text as the body's event, or why it is not one. */
function parseEvent(text: string): DraftEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`The event is not JSON: ${messageOf(error)}`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('The event must be a JSON object: {"type", "endpoint"?, "data"?}');
  return parsed as DraftEvent;
}

/**
 * Test-runs what the form holds (saved or not) against a sample event or a past one of the history:
 * POST /triggers/run, recorded as a test execution. Shows the status, error and its line, log lines,
 * reply and duration.
 */
export function TestRunPanel({ api, triggerId, eventTypes, draft }: { readonly api: ApiClient; readonly triggerId: string | undefined; readonly eventTypes: readonly string[]; readonly draft: () => TriggerWrite }) {
  const id = useId();
  const firstType = eventTypes[0] ?? 'test';
  const [text, setText] = useState(() => eventText(firstType));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const [result, setResult] = useState<DraftRun | undefined>(undefined);
  const [pastType, setPastType] = useState('');
  const [showPast, setShowPast] = useState(false);

  const loadPast = useCallback(
    () => (showPast ? call(api.GET('/history', { params: { query: { limit: PAST_EVENTS, ...(pastType === '' ? {} : { type: [pastType] }) } } })) : Promise.resolve(undefined)),
    [api, showPast, pastType],
  );
  const past = useResource(loadPast);

  const run = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    let body;
    try {
      body = { trigger: draft(), event: parseEvent(text), ...(triggerId === undefined ? {} : { triggerId }) };
    } catch (failure) {
      setError(messageOf(failure));
      return;
    }
    setBusy(true);
    try {
      setResult(await call(api.POST('/triggers/run', { body })));
    } catch (failure) {
      setResult(undefined);
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  const choosePast = (item: HistoryEvent) => {
    setText(JSON.stringify({ type: item.type, ...(item.endpointId === null ? {} : { endpoint: item.endpointId }), data: item.data }, null, 2));
  };

  return (
    <section className="card trg-test-run" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Test-run</h2>
      <form className="form" onSubmit={(event) => void run(event)} noValidate>
        <label htmlFor={`${id}-event`}>Event (JSON: type, endpoint?, data?)</label>
        <textarea id={`${id}-event`} className="mono" rows={7} value={text} onChange={(event) => setText(event.target.value)} spellCheck={false} aria-describedby={`${id}-event-hint`} />
        <p id={`${id}-event-hint`} className="muted field-hint">
          The run uses what the form holds now, saved or not.{' '}
          {eventTypes.map((type) => (
            <button key={type} type="button" className="trg-link-button" onClick={() => setText(eventText(type))}>
              Sample {type}
            </button>
          ))}
        </p>
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Running…' : 'Run test'}
        </button>
      </form>
      <details className="trg-past-events" onToggle={(event) => setShowPast(event.currentTarget.open)}>
        <summary>Use a past event</summary>
        <div className="trg-inline-entry">
          <label htmlFor={`${id}-past-type`}>Type</label>
          <select id={`${id}-past-type`} value={pastType} onChange={(event) => setPastType(event.target.value)}>
            <option value="">Any type</option>
            {eventTypes.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </div>
        <ErrorMessage message={past.error} />
        {past.data === undefined ? null : past.data.items.length === 0 ? (
          <p className="muted">No events in the history{pastType === '' ? '' : ` of type ${pastType}`}.</p>
        ) : (
          <ul className="trg-past-event-list">
            {past.data.items.map((item) => (
              <li key={item.id}>
                <button type="button" className="button button-quiet" onClick={() => choosePast(item)}>
                  Use
                </button>{' '}
                <span className="mono">{item.type}</span> {item.endpointKey === null ? null : <span className="mono">{item.endpointKey}</span>} <DateTime value={item.time} />
              </li>
            ))}
          </ul>
        )}
      </details>
      <ErrorMessage message={error} />
      <div aria-live="polite">
        {result === undefined ? null : (
          <div className="trg-test-run-result">
            <h3 className="trg-trace-heading">Result</h3>
            <ExecutionTrace execution={result.execution} reply={{ replied: result.replied, value: result.reply }} />
          </div>
        )}
      </div>
    </section>
  );
}
