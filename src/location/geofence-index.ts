import RBush from 'rbush';
import { containsPoint, type GeofenceShape } from './geofence-shape.js';

/** A geofence in the index: the caller's record with its parsed shape. */
export type IndexedGeofence<T> = T & { readonly shape: GeofenceShape };

/** One R-tree entry: a box of a geofence (a geofence across the antimeridian, or a MultiPolygon, has several). */
interface Entry<T> {
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
  readonly fence: IndexedGeofence<T>;
}

/**
 * The geofences of an account, found by position: an R-tree (rbush) of their bounding boxes picks the few whose box
 * holds the point, then `containsPoint` tests those exactly. Kept in memory; built from the store at start-up and
 * updated as geofences are written. Ids are unique: inserting an id already present replaces it.
 */
export class GeofenceIndex<T extends { readonly id: string; readonly tags: readonly string[] }> {
  readonly #tree = new RBush<Entry<T>>();
  readonly #entries = new Map<string, Entry<T>[]>();

  /**
   * An index of `items`, bulk-loaded (faster to build and to query than inserting one by one). When an id
   * appears more than once, the last one wins.
   */
  static build<T extends { readonly id: string; readonly tags: readonly string[] }>(items: Iterable<IndexedGeofence<T>>): GeofenceIndex<T> {
    const index = new GeofenceIndex<T>();
    for (const item of items) index.#entries.set(item.id, entriesOf(item));
    index.#tree.load([...index.#entries.values()].flat());
    return index;
  }

  /** How many geofences the index holds. */
  get size(): number {
    return this.#entries.size;
  }

  /** Adds `item`, or replaces the geofence with its id. */
  insert(item: IndexedGeofence<T>): void {
    this.remove(item.id);
    const entries = entriesOf(item);
    this.#entries.set(item.id, entries);
    for (const entry of entries) this.#tree.insert(entry);
  }

  /** Removes the geofence `id`: true when it was there. */
  remove(id: string): boolean {
    const entries = this.#entries.get(id);
    if (entries === undefined) return false;
    for (const entry of entries) this.#tree.remove(entry);
    this.#entries.delete(id);
    return true;
  }

  /**
   * The geofences containing the point (degrees; lon in [-180, 180]), sorted by id. A point on a boundary is
   * inside. With `tags` (non-empty), only geofences that have EVERY given tag, as the endpoint tag filters do.
   * @example index.containing(-17.8, 179.5, { tags: ['fiji'] })
   */
  containing(lat: number, lon: number, options: { readonly tags?: readonly string[] } = {}): Array<IndexedGeofence<T>> {
    const tags = options.tags ?? [];
    const seen = new Set<string>();
    const found: Array<IndexedGeofence<T>> = [];
    // -180 and 180 are one meridian; a box may end at either.
    const lons = lon === 180 || lon === -180 ? [-180, 180] : [lon];
    for (const x of lons) {
      for (const { fence } of this.#tree.search({ minX: x, minY: lat, maxX: x, maxY: lat })) {
        // A fence with several boxes (MultiPolygon parts) may come up more than once.
        if (seen.has(fence.id)) continue;
        seen.add(fence.id);
        if (tags.every((tag) => fence.tags.includes(tag)) && containsPoint(fence.shape, lat, lon)) found.push(fence);
      }
    }
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}

function entriesOf<T>(fence: IndexedGeofence<T>): Entry<T>[] {
  return fence.shape.bboxes.map(([minX, minY, maxX, maxY]) => ({ minX, minY, maxX, maxY, fence }));
}
