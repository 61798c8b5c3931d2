import { useCallback } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { useSession } from '../session/session';
import { formatDistance, formatPoint } from './location-types';

/** The point clicked on the map: its coordinates and the nearest place (`GET /location/reverse`). */
export function ClickedPoint({ lat, lon }: { readonly lat: number; readonly lon: number }) {
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/location/reverse', { params: { query: { lat, lon } } })), [api, lat, lon]);
  const nearest = useResource(load);
  const place = nearest.data;
  return (
    <div className="card loc-clicked" role="status" aria-live="polite">
      <span className="mono" data-testid="clicked-point">
        {formatPoint(lat, lon)}
      </span>
      {' · '}
      {place === undefined ? (
        <span className="muted">{nearest.error ?? 'Looking up the nearest place…'}</span>
      ) : (
        <span data-testid="nearest-place">
          Nearest place: <strong>{place.country ? `${place.name}, ${place.country}` : place.name}</strong>
          {place.distance === undefined ? null : `, ${formatDistance(place.distance)} away`}{' '}
          <span className="muted">({place.provider.name})</span>
        </span>
      )}
    </div>
  );
}
