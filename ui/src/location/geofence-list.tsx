import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import type { Resource } from '../api/use-resource';
import { ConfirmButton } from '../components/confirm-button';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { Pager } from '../components/pager';
import { TagList } from '../components/tag-list';
import { navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { mapHref, type MapQuery } from './location-api';
import type { LocationMap } from './location-map';
import { shapeSummary, type Geofence } from './location-types';

export const GEOFENCES_PAGE_SIZE = 25;

interface GeofencePage {
  readonly items: readonly Geofence[];
  readonly total: number;
  readonly offset: number;
}

export interface GeofenceListProps {
  readonly query: MapQuery;
  readonly geofences: Resource<GeofencePage>;
  readonly map: LocationMap | undefined;
  readonly onDeleted: () => void;
}

/** The geofences by name, 25 a page (`?q=` and `?offset=` in the URL): show one on the map, edit it, delete it. */
export function GeofenceList({ query, geofences, map, onDeleted }: GeofenceListProps) {
  const { api } = useSession();
  const remove = async (geofence: Geofence) => {
    await call(api.DELETE('/geofences/{id}', { params: { path: { id: geofence.id } } }));
    onDeleted();
  };
  const page = geofences.data;
  return (
    <section className="card loc-geofences" aria-labelledby="loc-geofences-title">
      <h2 id="loc-geofences-title">Geofences</h2>
      <NameFilter key={query.q} query={query} />
      <ErrorMessage message={geofences.error} />
      {page === undefined ? (
        geofences.error === undefined ? <Loading what="geofences" /> : null
      ) : (
        <div aria-busy={geofences.loading}>
          <Pager total={page.total} offset={page.offset} limit={GEOFENCES_PAGE_SIZE} noun="geofences" hrefAt={(at) => mapHref({ q: query.q, offset: at })} />
          {page.items.length === 0 ? (
            <p className="muted">{query.q === '' ? 'No geofences yet: create one below.' : 'No geofence has a name starting so.'}</p>
          ) : (
            <ul className="loc-geofence-list" aria-label="Geofences">
              {page.items.map((geofence) => (
                <li key={geofence.id} className="loc-geofence-item">
                  <div className="loc-geofence-head">
                    <button type="button" className="loc-link-button" onClick={() => map?.focusGeofence(geofence.id)} title="Show on the map">
                      {geofence.name}
                    </button>
                    <span className="muted small">{shapeSummary(geofence)}</span>
                  </div>
                  {geofence.tags.length === 0 ? null : <TagList tags={geofence.tags} />}
                  <div className="loc-geofence-actions">
                    <a className="button button-quiet" href={mapHref({ q: query.q, offset: query.offset, edit: geofence.id })} aria-label={`Edit ${geofence.name}`}>
                      Edit
                    </a>
                    <ConfirmButton
                      label="Delete"
                      name={`Delete ${geofence.name}`}
                      question={<>Delete “{geofence.name}”?</>}
                      busyLabel="Deleting…"
                      onConfirm={() => remove(geofence)}
                    />
                  </div>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

/** Name prefix, case-insensitive (`GET /geofences?q=`); applying it goes to the first page. */
function NameFilter({ query }: { readonly query: MapQuery }) {
  const id = useId();
  const [text, setText] = useState(query.q);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(mapHref({ q: text.trim(), edit: query.edit }));
  };
  return (
    <form className="loc-filter" role="search" aria-label="Filter geofences" onSubmit={submit}>
      <label htmlFor={`${id}-q`}>Name starts with</label>
      <div className="loc-filter-row">
        <input id={`${id}-q`} value={text} onChange={(event) => setText(event.target.value)} maxLength={200} />
        <button type="submit" className="button button-quiet">
          Filter
        </button>
      </div>
    </form>
  );
}
