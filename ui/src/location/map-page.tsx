import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { usePageTitle } from '../components/page-title';
import { navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { ClickedPoint } from './clicked-point';
import { EvaluateForm } from './evaluate-form';
import { GeofenceEditor } from './geofence-editor';
import { GeofenceList, GEOFENCES_PAGE_SIZE } from './geofence-list';
import { mapHref, readMapQuery } from './location-api';
import { LocationMap } from './location-map';
import type { Geofence, PointPicker } from './location-types';
import { PlaceSearch } from './place-search';
import './location.css';
import './map.css';

/** The API's largest page: the map draws up to this many geofences and positions. */
const DRAWN = 1000;

/** The Leaflet map in its box, made once for the page's life; the page gets it through `onMap`. */
function MapCanvas({ onMap, onBasemapError }: { readonly onMap: (map: LocationMap | undefined) => void; readonly onBasemapError: (message: string) => void }) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (element === null) return;
    const map = new LocationMap(element, onBasemapError);
    onMap(map);
    return () => {
      onMap(undefined);
      map.remove();
    };
  }, [onMap, onBasemapError]);
  return <div ref={container} className="loc-map" aria-label="Map of geofences and positions" data-testid="location-map" />;
}

/**
 * `#/map`: the account's geofences and endpoint positions on a map of the countries, a place search, the point
 * clicked last with its nearest place, and beside it the geofence list, the form of a new (or edited) geofence
 * and the evaluation of a position.
 */
export function MapPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Map');
  const { api } = useSession();
  const query = useMemo(() => readMapQuery(search), [search]);
  const { q, offset, edit } = query;
  const [map, setMap] = useState<LocationMap | undefined>(undefined);
  const [basemapError, setBasemapError] = useState<string | undefined>(undefined);
  const [picker, setPicker] = useState<PointPicker | undefined>(undefined);
  const [clicked, setClicked] = useState<{ readonly lat: number; readonly lon: number } | undefined>(undefined);
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const [formRound, setFormRound] = useState(0);

  const loadDrawn = useCallback(() => call(api.GET('/geofences', { params: { query: { limit: DRAWN } } })), [api]);
  const drawn = useResource(loadDrawn);
  const loadListed = useCallback(
    () => call(api.GET('/geofences', { params: { query: { limit: GEOFENCES_PAGE_SIZE, offset, q: q === '' ? undefined : q } } })),
    [api, q, offset],
  );
  const listed = useResource(loadListed);
  const loadPositions = useCallback(() => call(api.GET('/location/positions', { params: { query: { limit: DRAWN } } })), [api]);
  const positions = useResource(loadPositions);

  useEffect(() => {
    if (map !== undefined && drawn.data !== undefined) map.showGeofences(drawn.data.items);
  }, [map, drawn.data]);
  useEffect(() => {
    if (map !== undefined && positions.data !== undefined) map.showPositions(positions.data.items);
  }, [map, positions.data]);
  useEffect(() => {
    if (map !== undefined && drawn.data !== undefined && positions.data !== undefined) map.fitOnce();
  }, [map, drawn.data, positions.data]);
  useEffect(() => {
    map?.setPicking(picker !== undefined);
  }, [map, picker]);
  useEffect(() => {
    if (map === undefined) return;
    return map.onClick((lat, lon) => {
      if (picker !== undefined) {
        picker(lat, lon);
        setPicker(undefined);
        return;
      }
      map.markPoint(lat, lon);
      setClicked({ lat, lon });
    });
  }, [map, picker]);

  const { reload: reloadDrawn } = drawn;
  const { reload: reloadListed } = listed;
  const changed = () => {
    reloadDrawn();
    reloadListed();
  };
  const onSaved = (geofence: Geofence, created: boolean) => {
    setSaved(`${created ? 'Created' : 'Saved'} “${geofence.name}”.`);
    setPicker(undefined);
    setFormRound((round) => round + 1);
    changed();
    if (!created) navigate(mapHref({ q, offset }));
  };
  // A form asks for the next click; asking again (or another form asking) replaces the earlier request.
  const requestPick = useCallback((fill: PointPicker | undefined) => setPicker(() => fill), []);

  return (
    <section aria-labelledby="map-title">
      <h1 id="map-title">Map</h1>
      <div className="loc-map-layout">
        <div className="loc-map-main">
          <PlaceSearch map={map} />
          <ErrorMessage message={basemapError} />
          <ErrorMessage message={drawn.error ?? positions.error} />
          {picker === undefined ? null : (
            <p className="notice loc-pick-notice" role="status">
              Click the map to choose the point.{' '}
              <button type="button" className="button button-quiet" onClick={() => setPicker(undefined)}>
                Cancel
              </button>
            </p>
          )}
          <MapCanvas onMap={setMap} onBasemapError={setBasemapError} />
          <p className="muted loc-map-legend">
            <span className="loc-key loc-key-geofence" aria-hidden="true" /> geofences ({drawn.data?.total ?? '…'}){' '}
            <span className="loc-key loc-key-position" aria-hidden="true" /> endpoint positions ({positions.data?.items.length ?? '…'}). Click the map for the nearest
            place.
          </p>
          {clicked === undefined ? null : <ClickedPoint key={`${clicked.lat},${clicked.lon}`} lat={clicked.lat} lon={clicked.lon} />}
        </div>
        <div className="loc-map-side">
          {saved === undefined ? null : (
            <p className="notice" role="status">
              {saved}
            </p>
          )}
          <GeofenceList query={query} geofences={listed} map={map} onDeleted={changed} />
          <GeofenceEditor
            key={`${edit ?? 'new'}-${formRound}`}
            editId={edit}
            cancelHref={mapHref({ q, offset })}
            picking={picker !== undefined}
            requestPick={requestPick}
            onSaved={onSaved}
          />
          <EvaluateForm picking={picker !== undefined} requestPick={requestPick} onEvaluated={positions.reload} />
        </div>
      </div>
    </section>
  );
}
