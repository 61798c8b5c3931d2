import { useEffect, useState } from 'react';
import { ErrorMessage } from '../components/error-message';
import type { Service } from '../services/use-services';
import { useSession } from '../session/session';
import { EventTable, type HistoryEvent } from './event-table';
import { openEventStream } from './event-stream';
import type { HistoryQuery } from './history-query';

/** The most live events kept on the page (the oldest go first). */
export const LIVE_TAIL_MAX = 100;

interface Tail {
  readonly shown: readonly HistoryEvent[];
  /** Arrived while paused, newest first: shown on resume. */
  readonly held: readonly HistoryEvent[];
}

/** New events as they happen, newest first, with the type and endpoint filters of the search (the service is checked here). */
export function LiveTail({ query, services }: { readonly query: HistoryQuery; readonly services: ReadonlyMap<string, Service> }) {
  const { credentials } = useSession();
  const [status, setStatus] = useState<'connecting' | 'live' | 'stopped'>('connecting');
  const [error, setError] = useState<string | undefined>(undefined);
  const [paused, setPaused] = useState(false);
  const [tail, setTail] = useState<Tail>({ shown: [], held: [] });
  const { token, accountId } = credentials;
  const typeList = query.types.join('\n');
  const { endpoint, serviceId } = query;

  useEffect(() => {
    const close = openEventStream(
      token,
      accountId,
      { types: typeList === '' ? [] : typeList.split('\n'), endpoint },
      {
        onOpen: () => setStatus('live'),
        onEvent: (event) => {
          if (serviceId !== '' && event.serviceId !== serviceId) return;
          setTail((current) => ({ ...current, held: [event, ...current.held].slice(0, LIVE_TAIL_MAX) }));
        },
        onError: (message) => {
          setStatus('stopped');
          setError(message);
        },
      },
    );
    return close;
  }, [token, accountId, typeList, endpoint, serviceId]);

  // Held events move to the table unless paused.
  const shown = paused ? tail.shown : [...tail.held, ...tail.shown].slice(0, LIVE_TAIL_MAX);
  const waiting = paused ? tail.held.length : 0;

  return (
    <section className="live-tail" aria-labelledby="live-title">
      <div className="live-head">
        <h2 id="live-title">
          Live events <span className={`live-status live-${status}`}>{status === 'live' ? (paused ? 'paused' : 'live') : status}</span>
        </h2>
        <button
          type="button"
          className="button button-quiet"
          aria-pressed={paused}
          disabled={status === 'stopped'}
          onClick={() => {
            // What was held shows now (resuming), or stays shown (pausing); later events wait while paused.
            setTail((current) => ({ shown: [...current.held, ...current.shown].slice(0, LIVE_TAIL_MAX), held: [] }));
            setPaused(!paused);
          }}
        >
          {paused ? 'Resume' : 'Pause'}
        </button>
      </div>
      <ErrorMessage message={error} />
      <p className="muted" aria-live="polite">
        {waiting > 0 ? `${waiting} new while paused. ` : ''}
        The newest {LIVE_TAIL_MAX} events matching the types, endpoint and service; the period does not apply.
      </p>
      {shown.length === 0 ? (
        status === 'stopped' ? null : <p className="muted">Waiting for events…</p>
      ) : (
        <EventTable events={shown} services={services} label="Live events" />
      )}
    </section>
  );
}
