// The Leaflet map of the Map page, kept outside React: React renders the lists and forms, this class owns the
// map's layers. Popups are built as DOM nodes with textContent (names come from users: never HTML), and every
// style is a Leaflet option or a class, so the page runs under the service's CSP (no inline style attributes).
import type { Geometry } from 'geojson';
import * as L from 'leaflet';
import 'leaflet/dist/leaflet.css';
import { href } from '../router/hash-location';
import { endpointPath } from '../router/routes';
import { loadCountries } from './basemap';
import { mapHref } from './location-api';
import { formatDistance, formatPoint, shapeSummary, type Geofence, type Place, type Position } from './location-types';

const COLOURS = {
  land: '#f4f1e8',
  border: '#9aa3ad',
  geofence: '#1f4e79',
  position: '#c2410c',
  place: '#6d28d9',
  point: '#1b2430',
} as const;

/** Where the map starts when there is nothing to show: the whole world. */
const WORLD_VIEW = { center: L.latLng(25, 10), zoom: 2 } as const;
const FOCUS_MAX_ZOOM = 13;
const TIME = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

/** Options of a GeoJSON layer that every layer it makes takes as its own (Leaflet passes them on). */
type GeoJsonPathOptions = L.GeoJSONOptions & L.PathOptions;

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function geofencePopup(geofence: Geofence): HTMLElement {
  const popup = element('div', 'loc-popup');
  popup.append(element('strong', 'loc-popup-title', geofence.name), element('div', 'muted', shapeSummary(geofence)));
  if (geofence.tags.length > 0) {
    const tags = element('div', 'loc-popup-tags');
    for (const tag of geofence.tags) tags.append(element('span', 'tag', tag));
    popup.append(tags);
  }
  const edit = element('a', 'loc-popup-link', 'Edit');
  edit.href = mapHref({ edit: geofence.id });
  edit.setAttribute('aria-label', `Edit ${geofence.name}`);
  popup.append(edit);
  return popup;
}

function positionPopup(position: Position): HTMLElement {
  const popup = element('div', 'loc-popup');
  const link = element('a', 'loc-popup-title mono', position.endpointId);
  link.href = href(endpointPath(position.endpointId));
  const at = new Date(position.at);
  const time = element('time', '', Number.isNaN(at.getTime()) ? position.at : TIME.format(at));
  time.dateTime = position.at;
  const when = element('div', '');
  when.append(time);
  const accuracy = position.accuracy === null ? 'accuracy unknown' : `± ${formatDistance(position.accuracy)}`;
  popup.append(link, when, element('div', 'muted', `${formatPoint(position.lat, position.lon)} · ${accuracy} · ${position.source}`));
  return popup;
}

/** The Map page's Leaflet map: the country basemap, geofences, positions, a found place and a clicked point. */
export class LocationMap {
  readonly #map: L.Map;
  readonly #container: HTMLElement;
  readonly #geofences = L.featureGroup();
  readonly #positions = L.featureGroup();
  readonly #marks = L.layerGroup();
  readonly #geofenceLayers = new Map<string, L.Layer & { getBounds(): L.LatLngBounds }>();
  readonly #shown = new Map<string, Geofence>();
  readonly #resize: ResizeObserver;
  #fitted = false;
  #zooming = false;
  #removed = false;

  /** Makes the map in `container`; the basemap comes when the outlines have loaded (`onBasemapError` if they fail). */
  constructor(container: HTMLElement, onBasemapError: (message: string) => void) {
    this.#container = container;
    this.#map = L.map(container, { minZoom: 1, maxZoom: 18, worldCopyJump: false, maxBounds: [[-85, -240], [85, 240]], maxBoundsViscosity: 0.8 });
    this.#map.setView(WORLD_VIEW.center, WORLD_VIEW.zoom);
    // The outlines lie under everything and take no clicks: a click on land is a click on the map.
    // Its own pane under the overlays (a new pane would stack above them), where tiles would be.
    const basemapPane = this.#map.createPane('loc-basemap');
    basemapPane.style.zIndex = '200';
    this.#geofences.addTo(this.#map);
    this.#positions.addTo(this.#map);
    this.#marks.addTo(this.#map);
    this.#map.on('moveend', () => this.#recordView());
    this.#map.on('zoomanim', () => (this.#zooming = true));
    this.#map.on('zoomend', () => (this.#zooming = false));
    this.#recordView();
    // The page lays the map out in a grid that changes with the window: Leaflet must be told its new size.
    this.#resize = new ResizeObserver(() => this.#map.invalidateSize());
    this.#resize.observe(container);
    loadCountries().then(
      (countries) => {
        if (this.#removed) return;
        const options: GeoJsonPathOptions = {
          pane: 'loc-basemap',
          interactive: false,
          className: 'loc-country',
          attribution: 'Countries: <a href="https://www.naturalearthdata.com/">Natural Earth</a> (public domain)',
          style: { color: COLOURS.border, weight: 0.7, fillColor: COLOURS.land, fillOpacity: 1 },
        };
        L.geoJSON(countries, options).addTo(this.#map);
        container.dataset.basemap = 'loaded';
      },
      (error: unknown) => onBasemapError(error instanceof Error ? error.message : String(error)),
    );
  }

  /** Calls `handler` with the point of each click on the map or a geofence (not on a marker). */
  onClick(handler: (lat: number, lon: number) => void): () => void {
    const listener = (event: L.LeafletMouseEvent) => handler(event.latlng.lat, L.Util.wrapNum(event.latlng.lng, [-180, 180], true));
    this.#map.on('click', listener);
    return () => this.#map.off('click', listener);
  }

  /** While picking, every click reaches the map, even on a geofence (CSS turns their pointer events off). */
  setPicking(picking: boolean): void {
    this.#container.classList.toggle('loc-picking', picking);
  }

  /** Draws these geofences instead of the ones drawn before. */
  showGeofences(geofences: readonly Geofence[]): void {
    this.#geofences.clearLayers();
    this.#geofenceLayers.clear();
    this.#shown.clear();
    // A click on a geofence opens its popup and still reaches the map (the nearest place of the point).
    const style = { color: COLOURS.geofence, weight: 2, fillColor: COLOURS.geofence, fillOpacity: 0.15, className: 'loc-geofence' };
    for (const geofence of geofences) {
      let layer: (L.Layer & { getBounds(): L.LatLngBounds }) | undefined;
      if (geofence.circle !== undefined) {
        layer = L.circle([geofence.circle.lat, geofence.circle.lon], { ...style, radius: geofence.circle.radius });
      } else if (geofence.geometry !== undefined) {
        const options: GeoJsonPathOptions = { ...style, style: () => style };
        layer = L.geoJSON(geofence.geometry as unknown as Geometry, options);
      }
      if (layer === undefined) continue;
      // Not bindPopup: it stops the click, and a click inside a geofence is also a point of the map.
      layer.on('click', (event: L.LeafletMouseEvent) => this.#openGeofencePopup(geofence, event.latlng));
      this.#geofences.addLayer(layer);
      this.#geofenceLayers.set(geofence.id, layer);
      this.#shown.set(geofence.id, geofence);
    }
    this.#container.dataset.geofences = String(this.#geofenceLayers.size);
  }

  /** Draws the endpoints' positions (a dot each, its accuracy as a circle when known) instead of the earlier ones. */
  showPositions(positions: readonly Position[]): void {
    this.#positions.clearLayers();
    for (const position of positions) {
      const at = L.latLng(position.lat, position.lon);
      if (position.accuracy !== null && position.accuracy > 0) {
        L.circle(at, { radius: position.accuracy, color: COLOURS.position, weight: 1, opacity: 0.6, fillOpacity: 0.08, interactive: false, className: 'loc-accuracy' }).addTo(this.#positions);
      }
      L.circleMarker(at, { radius: 7, color: '#ffffff', weight: 2, fillColor: COLOURS.position, fillOpacity: 1, className: 'loc-position', bubblingMouseEvents: false })
        .bindPopup(() => positionPopup(position))
        .addTo(this.#positions);
    }
  }

  /** Once, when the first data has come: the view that shows every geofence and position (else the world). */
  fitOnce(): void {
    if (this.#fitted) return;
    this.#fitted = true;
    const bounds = this.#geofences.getBounds().extend(this.#positions.getBounds());
    if (bounds.isValid()) this.#map.fitBounds(bounds, { padding: [30, 30], maxZoom: FOCUS_MAX_ZOOM });
  }

  /** Flies to a found place and marks it, its name in a popup. */
  showPlace(place: Place): void {
    this.#marks.clearLayers();
    const label = place.country ? `${place.name}, ${place.country}` : place.name;
    L.circleMarker([place.lat, place.lon], { radius: 8, color: '#ffffff', weight: 2, fillColor: COLOURS.place, fillOpacity: 1, className: 'loc-place', bubblingMouseEvents: false })
      .bindPopup(() => element('strong', 'loc-popup-title', label))
      .addTo(this.#marks);
    this.#map.flyTo([place.lat, place.lon], 10, { duration: 1 });
  }

  /** Marks the point clicked last (replacing a found place's mark). */
  markPoint(lat: number, lon: number): void {
    this.#marks.clearLayers();
    L.circleMarker([lat, lon], { radius: 5, color: COLOURS.point, weight: 2, fillColor: '#ffffff', fillOpacity: 1, interactive: false, className: 'loc-point' }).addTo(this.#marks);
  }

  /** Shows one geofence whole and opens its popup. */
  focusGeofence(id: string): void {
    const layer = this.#geofenceLayers.get(id);
    if (layer === undefined) return;
    this.#map.fitBounds(layer.getBounds(), { padding: [30, 30], maxZoom: FOCUS_MAX_ZOOM });
    const geofence = this.#shown.get(id);
    if (geofence !== undefined) this.#openGeofencePopup(geofence, layer.getBounds().getCenter());
  }

  #openGeofencePopup(geofence: Geofence, at: L.LatLng): void {
    L.popup().setLatLng(at).setContent(geofencePopup(geofence)).openOn(this.#map);
  }

  remove(): void {
    this.#removed = true;
    this.#resize.disconnect();
    // A zoom animation ends in Leaflet's own timer, which reads the map's panes: removed before, it throws.
    if (this.#zooming) this.#map.once('zoomend', () => window.setTimeout(() => this.#map.remove()));
    else this.#map.remove();
  }

  /** The view as data attributes: what a test (or a curious reader of the DOM) can check the map shows. */
  #recordView(): void {
    if (this.#removed) return;
    const center = this.#map.getCenter();
    this.#container.dataset.center = `${center.lat.toFixed(4)},${center.lng.toFixed(4)}`;
    this.#container.dataset.zoom = String(this.#map.getZoom());
  }
}
