import { useId } from 'react';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { STREAM_KEPT, type EventStream, type StreamEvent } from './use-event-stream';

const STATUS_TEXT = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', stopped: 'Stopped' } as const;

/** A one-line hint of what an event carries (its data, shortened). */
function preview(event: StreamEvent): string {
  const text = event.data === undefined || event.data === null ? '' : JSON.stringify(event.data);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** The endpoint's events as they come, newest first, each expandable to its JSON; pausing freezes the list. */
export function EndpointEvents({ stream }: { readonly stream: EventStream }) {
  const id = useId();
  const { events, status, error, paused, newWhilePaused, setPaused } = stream;
  return (
    <section className="card panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Live events</h2>
      <div className="event-stream-bar">
        <span className="stream-status" data-testid="stream-status">
          {paused ? `Paused${newWhilePaused > 0 ? `: ${newWhilePaused} new` : ''}` : STATUS_TEXT[status]}
        </span>
        <button type="button" className="button button-quiet button-small" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? 'Resume' : 'Pause'}
        </button>
      </div>
      <ErrorMessage message={error} />
      {events.length === 0 ? (
        <p className="muted">No event since the page opened. Events of this endpoint show here as they come (the newest {STREAM_KEPT}).</p>
      ) : (
        <ul className="event-list" aria-label="Events of this endpoint" aria-live={paused ? 'off' : 'polite'}>
          {events.map((event) => (
            <li key={event.id}>
              <details>
                <summary>
                  <span className="event-type">{event.type}</span>
                  <DateTime value={event.time} />
                  <span className="mono muted">{preview(event)}</span>
                </summary>
                <pre className="json-view">{JSON.stringify(event, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
