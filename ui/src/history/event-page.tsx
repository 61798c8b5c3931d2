import { useCallback } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { endpointPath, servicePath } from '../router/routes';
import { useSession } from '../session/session';
import { historyHref } from './history-query';

/** One event of the history (`GET /history/{id}`): its fields, links to its endpoint and service, the whole event as JSON. */
export function EventPage({ id }: { readonly id: string }) {
  usePageTitle('Event');
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/history/{id}', { params: { path: { id } } })), [api, id]);
  const { data: event, error } = useResource(load);

  return (
    <section aria-labelledby="event-title">
      <p className="breadcrumb">
        <a href={historyHref({})}>History</a> /
      </p>
      <h1 id="event-title">Event {event === undefined ? '' : <span className="event-type">{event.type}</span>}</h1>
      <ErrorMessage message={error} />
      {event === undefined ? (
        error === undefined ? <Loading what="the event" /> : null
      ) : (
        <>
          <dl className="fields">
            <dt>Time</dt>
            <dd>
              <DateTime value={event.time} />
            </dd>
            <dt>Type</dt>
            <dd className="mono">
              <a href={historyHref({ types: [event.type] })}>{event.type}</a>
            </dd>
            <dt>Endpoint</dt>
            <dd className="mono">
              {event.endpointId === null ? (
                <span className="muted">none</span>
              ) : (
                <>
                  <a href={href(endpointPath(event.endpointId))}>{event.endpointKey ?? event.endpointId}</a>{' '}
                  <a className="event-more" href={historyHref({ endpoint: event.endpointId })}>
                    its events
                  </a>
                </>
              )}
            </dd>
            <dt>Service</dt>
            <dd className="mono">{event.serviceId === null ? <span className="muted">none</span> : <a href={href(servicePath(event.serviceId))}>{event.serviceId}</a>}</dd>
            <dt>Id</dt>
            <dd className="mono">{event.id}</dd>
          </dl>
          <h2>JSON</h2>
          <pre className="event-json" tabIndex={0} aria-label="The event as JSON">
            {JSON.stringify(event, null, 2)}
          </pre>
        </>
      )}
    </section>
  );
}
