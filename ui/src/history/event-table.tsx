import type { ApiData } from '../api/client';
import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { endpointPath, eventPath } from '../router/routes';
import type { Service } from '../services/use-services';

export type HistoryEvent = ApiData<'/history/{id}'>;

/** The start of an event's data as one line of JSON. */
function preview(data: unknown): string {
  const text = data === undefined ? '' : JSON.stringify(data);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

/** One row per event: time (to its detail), type, endpoint (to its page), service, the start of its data. */
export function EventTable({ events, services, label }: { readonly events: readonly HistoryEvent[]; readonly services: ReadonlyMap<string, Service>; readonly label: string }) {
  return (
    <div className="table-scroll">
      <table className="table event-table" aria-label={label}>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Service</th>
            <th scope="col">Data</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <tr key={event.id}>
              <td className="nowrap">
                <a href={href(eventPath(event.id))} aria-label={`Event ${event.type} at ${event.time}`}>
                  <DateTime value={event.time} />
                </a>
              </td>
              <td className="mono">{event.type}</td>
              <td className="mono">{event.endpointId === null ? <span className="muted">none</span> : <a href={href(endpointPath(event.endpointId))}>{event.endpointKey ?? event.endpointId}</a>}</td>
              <td>{event.serviceId === null ? <span className="muted">none</span> : (services.get(event.serviceId)?.name ?? <span className="mono">{event.serviceId}</span>)}</td>
              <td className="mono event-data">{preview(event.data)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
