import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import type { LocationMap } from './location-map';
import type { Place } from './location-types';

interface Found {
  readonly query: string;
  readonly items: readonly Place[];
  readonly provider: string;
}

const SHOWN = 5;

function placeLabel(place: Place): string {
  return place.country ? `${place.name}, ${place.country}` : place.name;
}

/** Finds places by name (`GET /location/forward`) and flies the map to the best one; the others are a click away. */
export function PlaceSearch({ map }: { readonly map: LocationMap | undefined }) {
  const id = useId();
  const { api } = useSession();
  const [text, setText] = useState('');
  const [found, setFound] = useState<Found | undefined>(undefined);
  const action = useAction();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const q = text.trim();
    if (q === '') return;
    const answer = await action.run(() => call(api.GET('/location/forward', { params: { query: { q, limit: SHOWN } } })));
    if (answer === undefined) return;
    setFound({ query: q, items: answer.items, provider: answer.provider.name });
    const best = answer.items[0];
    if (best !== undefined) map?.showPlace(best);
  };

  return (
    <div className="loc-search">
      <form className="loc-search-form" role="search" aria-label="Find a place" onSubmit={(event) => void submit(event)}>
        <label htmlFor={`${id}-q`} className="visually-hidden">
          Place
        </label>
        <input id={`${id}-q`} type="search" value={text} onChange={(event) => setText(event.target.value)} placeholder="Find a place: Berlin, Lyon…" maxLength={200} />
        <button type="submit" className="button" disabled={action.busy}>
          {action.busy ? 'Searching…' : 'Search'}
        </button>
      </form>
      <ErrorMessage message={action.error} />
      {found === undefined ? null : found.items.length === 0 ? (
        <p className="muted" role="status">
          No place found for “{found.query}”.
        </p>
      ) : (
        <div role="status" className="loc-places">
          <span className="muted small">{found.provider}:</span>
          <ul aria-label="Places found">
            {found.items.map((place, index) => (
              <li key={`${place.lat},${place.lon},${index}`}>
                <button type="button" className="button button-quiet loc-place-button" onClick={() => map?.showPlace(place)}>
                  {placeLabel(place)}
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}
