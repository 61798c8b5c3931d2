import { ConfirmButton } from '../components/confirm-button';
import type { LocationService } from './location-types';

const COUNT = new Intl.NumberFormat('en');

export interface LocationServiceTableProps {
  /** In fallback order. */
  readonly services: readonly LocationService[];
  /** A reorder is under way: the move buttons wait. */
  readonly busy: boolean;
  readonly onMove: (index: number, by: -1 | 1) => void;
  readonly onDelete: (service: LocationService) => Promise<void>;
}

/** What an embedded service holds: "1,200 cells, 40 Wi-Fi"; nothing for the HTTP providers. */
function positionsText(service: LocationService): string {
  if (service.type !== 'embedded') return '—';
  if (service.positions === undefined) return '…';
  return `${COUNT.format(service.positions.cells)} cells, ${COUNT.format(service.positions.wifi)} Wi-Fi`;
}

/** One row per service, first tried first: its place, name, type, URL, whether a key is set (never the key). */
export function LocationServiceTable({ services, busy, onMove, onDelete }: LocationServiceTableProps) {
  return (
    <div className="table-scroll">
      <table className="table loc-services-table" aria-label="Location services">
        <thead>
          <tr>
            <th scope="col">Order</th>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">URL</th>
            <th scope="col">API key</th>
            <th scope="col">Positions</th>
            <th scope="col" className="loc-actions-head">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {services.map((service, index) => (
            <tr key={service.id}>
              <td className="nowrap">
                <span className="loc-order">{index + 1}</span>
                <button type="button" className="button button-quiet loc-move" aria-label={`Move ${service.name} up`} title="Try earlier" disabled={busy || index === 0} onClick={() => onMove(index, -1)}>
                  ↑
                </button>
                <button
                  type="button"
                  className="button button-quiet loc-move"
                  aria-label={`Move ${service.name} down`}
                  title="Try later"
                  disabled={busy || index === services.length - 1}
                  onClick={() => onMove(index, 1)}
                >
                  ↓
                </button>
              </td>
              <td className="loc-service-name">{service.name}</td>
              <td className="nowrap">{service.type}</td>
              <td className="mono loc-url">{service.url ?? <span className="muted">—</span>}</td>
              <td className="nowrap">{service.type === 'embedded' ? <span className="muted">—</span> : service.hasApiKey ? 'set' : <span className="muted">none</span>}</td>
              <td data-testid="service-positions">
                {positionsText(service)}
              </td>
              <td>
                <ConfirmButton
                  label="Delete"
                  name={`Delete ${service.name}`}
                  question={service.type === 'embedded' ? <>Delete “{service.name}” and its imported positions?</> : <>Delete “{service.name}”? Its key goes with it.</>}
                  busyLabel="Deleting…"
                  onConfirm={() => onDelete(service)}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
