import { lazy, Suspense } from 'react';
import { Loading } from '../components/loading';

// Leaflet and the country outlines are loaded with the Map page only: the other pages' bundle stays as small as it was.
const MapPage = lazy(() => import('./map-page').then((module) => ({ default: module.MapPage })));

/** `#/map`, its code fetched on first use. */
export function MapRoute({ search }: { readonly search: URLSearchParams }) {
  return (
    <Suspense fallback={<Loading what="the map" />}>
      <MapPage search={search} />
    </Suspense>
  );
}
