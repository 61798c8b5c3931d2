// The map's only background: Natural Earth's country outlines (world-atlas, 1:50m), bundled with the UI as an
// asset and fetched from this origin, so the map needs no tile server and nothing from elsewhere at run time.
import type { FeatureCollection, Geometry } from 'geojson';
import { feature } from 'topojson-client';
import type { GeometryCollection, Topology } from 'topojson-specification';
import atlasUrl from 'world-atlas/countries-50m.json?url';

type Countries = FeatureCollection<Geometry, { name?: string }>;

let loading: Promise<Countries> | undefined;

/** The countries as GeoJSON, loaded once per page load (a failed load is tried again next time). */
export function loadCountries(): Promise<Countries> {
  loading ??= fetchCountries().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function fetchCountries(): Promise<Countries> {
  const response = await fetch(atlasUrl);
  if (!response.ok) throw new Error(`The country outlines could not be loaded (${response.status})`);
  const topology = (await response.json()) as Topology<{ countries: GeometryCollection<{ name?: string }> }>;
  return feature(topology, topology.objects.countries);
}
