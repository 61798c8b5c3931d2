import type { Endpoint, Endpoints } from '../domain/endpoints.js';
import { newId } from '../domain/ids.js';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { createEvent, type Event } from '../events/event.js';
import { checkLatLon } from './geodesy.js';
import { GeofenceIndex } from './geofence-index.js';
import { containsPoint, parseGeofenceShape, type GeofenceShape } from './geofence-shape.js';
import type { Geofence, GeofenceStore, PositionStore } from './model.js';
import type { LocationUsage } from './usage.js';

export interface GeofenceInput {
  readonly name: string;
  readonly description?: string | null | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly geometry?: unknown;
  readonly circle?: unknown;
}

export interface EvalOptions {
  /** Only geofences with every one of these tags; the others keep their state. */
  readonly tags?: readonly string[] | undefined;
  /** Also report (and emit) `inside` for geofences the endpoint stays in. */
  readonly inside?: boolean | undefined;
  readonly accuracy?: number | undefined;
  /** What gave the position (`api`, `script`), kept with the endpoint's position. */
  readonly source: string;
}

export type Transition = 'enter' | 'exit' | 'inside';

/** One change of an endpoint against one geofence, as its `geofence` event carries it. */
export interface GeofenceTransition {
  readonly transition: Transition;
  readonly geofenceId: string;
  readonly name: string;
  readonly tags: string[];
  readonly lat: number;
  readonly lon: number;
  readonly accuracy?: number;
  /** Seconds since the endpoint entered (exit and inside). */
  readonly dwellSeconds?: number;
}

export interface EvalResult {
  readonly endpointId: string;
  readonly endpointKey: string;
  readonly transitions: GeofenceTransition[];
  /** The geofences (of those evaluated) the endpoint is inside now. */
  readonly inside: string[];
}

interface Loaded {
  readonly index: GeofenceIndex<{ readonly id: string; readonly tags: readonly string[] }>;
  readonly byId: Map<string, Geofence>;
  readonly shapes: Map<string, GeofenceShape>;
}

export interface GeofencesOptions {
  /** Geofences one account may have. */
  readonly maxPerAccount: number;
  /** Publishes a platform event (the `geofence` events); resolves once it is durable. */
  readonly publish: (event: Event) => Promise<void>;
  readonly usage: LocationUsage;
}

/**
 * The account's geofences and the evaluation of endpoints' positions against them. Each account's geofences
 * are held in an R-tree in memory (built from the store on first use, kept in step by every change here), so
 * an evaluation is a look-up plus exact tests of the few candidates; which geofences each endpoint is inside
 * is stored, so enter and exit are right across restarts. Evaluations of one endpoint run one at a time.
 */
export class Geofences {
  readonly #store: GeofenceStore;
  readonly #positions: PositionStore;
  readonly #endpoints: Endpoints;
  readonly #options: GeofencesOptions;
  readonly #loaded = new Map<string, Promise<Loaded>>();
  readonly #perEndpoint = new Map<string, Promise<unknown>>();

  constructor(store: GeofenceStore, positions: PositionStore, endpoints: Endpoints, options: GeofencesOptions) {
    this.#store = store;
    this.#positions = positions;
    this.#endpoints = endpoints;
    this.#options = options;
  }

  /** The account's geofences by name, filtered by a name prefix (case-insensitive) and tags (every one). */
  async list(scope: Scope, filter: { q?: string | undefined; tags?: readonly string[] | undefined }, page: PageRequest): Promise<Page<Geofence>> {
    const { byId } = await this.#load(scope.accountId);
    const prefix = filter.q?.toLowerCase();
    const matching = [...byId.values()]
      .filter((geofence) => (prefix === undefined || geofence.name.toLowerCase().startsWith(prefix)) && hasEvery(geofence.tags, filter.tags))
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
    return { items: matching.slice(page.offset, page.offset + page.limit), total: matching.length, limit: page.limit, offset: page.offset };
  }

  async get(scope: Scope, id: string): Promise<Geofence> {
    const found = (await this.#load(scope.accountId)).byId.get(id);
    if (!found) throw new AppError('IOTB_GEOFENCE_NOT_FOUND');
    return found;
  }

  async create(scope: Scope, input: GeofenceInput): Promise<Geofence> {
    const loaded = await this.#load(scope.accountId);
    if (loaded.byId.size >= this.#options.maxPerAccount) throw new AppError('IOTB_GEOFENCE_LIMIT', undefined, { max: this.#options.maxPerAccount });
    const now = isoTime(Date.now());
    const { geofence, shape } = build({ id: newId(), accountId: scope.accountId, createdAt: now, updatedAt: now }, input);
    await this.#store.insert(geofence);
    loaded.byId.set(geofence.id, geofence);
    loaded.shapes.set(geofence.id, shape);
    loaded.index.insert({ id: geofence.id, tags: geofence.tags, shape });
    return geofence;
  }

  /** Replaces name, description, tags and shape; the endpoints inside keep their entry time. */
  async replace(scope: Scope, id: string, input: GeofenceInput): Promise<Geofence> {
    const before = await this.get(scope, id);
    const { geofence, shape } = build({ id, accountId: scope.accountId, createdAt: before.createdAt, updatedAt: isoTime(Date.now()) }, input);
    await this.#store.update(geofence);
    const loaded = await this.#load(scope.accountId);
    loaded.byId.set(id, geofence);
    loaded.shapes.set(id, shape);
    loaded.index.remove(id);
    loaded.index.insert({ id, tags: geofence.tags, shape });
    return geofence;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    if (!(await this.#store.delete(scope.accountId, id))) throw new AppError('IOTB_GEOFENCE_NOT_FOUND');
    const loaded = await this.#load(scope.accountId);
    loaded.byId.delete(id);
    loaded.shapes.delete(id);
    loaded.index.remove(id);
  }

  /** Whether the point is inside the geofence (its edge counts); no state, no event. */
  async contains(scope: Scope, id: string, position: unknown): Promise<boolean> {
    const { lat, lon } = checkLatLon(position, 'point');
    const shape = (await this.#load(scope.accountId)).shapes.get(id);
    if (!shape) throw new AppError('IOTB_GEOFENCE_NOT_FOUND');
    return containsPoint(shape, lat, lon);
  }

  /**
   * Evaluates the endpoint's position against the account's geofences (with `tags`: those having every tag):
   * `enter` for each it is in now and was not, `exit` for each it was in and is not, `inside` (on request) for
   * each it stays in. Stores the new state and the position, then emits one `geofence` event per transition.
   */
  async evaluate(scope: Scope, endpointRef: string, position: unknown, options: EvalOptions): Promise<EvalResult> {
    const { lat, lon } = checkLatLon(position, 'position');
    const endpoint = await this.#endpoints.get(scope, endpointRef);
    this.#options.usage.count(scope.accountId, 'geofence-eval');
    return this.#serially(endpoint.id, () => this.#evaluate(endpoint, lat, lon, options));
  }

  async #evaluate(endpoint: Endpoint, lat: number, lon: number, options: EvalOptions): Promise<EvalResult> {
    const { index, byId } = await this.#load(endpoint.accountId);
    const now = Date.now();
    const inside = index.containing(lat, lon, options.tags && options.tags.length > 0 ? { tags: options.tags } : undefined).map((fence) => fence.id);
    const before = await this.#store.presence(endpoint.id);
    const considered = (id: string) => {
      const fence = byId.get(id);
      return fence !== undefined && hasEvery(fence.tags, options.tags);
    };
    const entered = inside.filter((id) => !before.has(id));
    const left = [...before.keys()].filter((id) => considered(id) && !inside.includes(id));
    const stayed = options.inside ? inside.filter((id) => before.has(id)) : [];

    await this.#store.changePresence(endpoint.id, entered, left, now);
    const at = isoTime(now);
    await this.#positions.put({ endpointId: endpoint.id, accountId: endpoint.accountId, lat, lon, accuracy: options.accuracy ?? null, source: options.source, at });

    const transition = (kind: Transition, id: string): GeofenceTransition => {
      const fence = byId.get(id)!;
      const since = before.get(id);
      return {
        transition: kind,
        geofenceId: id,
        name: fence.name,
        tags: fence.tags,
        lat,
        lon,
        ...(options.accuracy === undefined ? {} : { accuracy: options.accuracy }),
        ...(since === undefined || kind === 'enter' ? {} : { dwellSeconds: Math.round((now - since) / 1000) }),
      };
    };
    const transitions = [...left.map((id) => transition('exit', id)), ...entered.map((id) => transition('enter', id)), ...stayed.map((id) => transition('inside', id))];
    for (const data of transitions) {
      await this.#options.publish(createEvent({ type: 'geofence', accountId: endpoint.accountId, serviceId: endpoint.serviceId, endpointId: endpoint.id, endpointKey: endpoint.key, time: at, data }));
    }
    return { endpointId: endpoint.id, endpointKey: endpoint.key, transitions, inside };
  }

  /** Runs `work` after the endpoint's evaluations before it: two positions at once must not both "enter". */
  async #serially<T>(endpointId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#perEndpoint.get(endpointId) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(work);
    this.#perEndpoint.set(endpointId, current);
    try {
      return await current;
    } finally {
      if (this.#perEndpoint.get(endpointId) === current) this.#perEndpoint.delete(endpointId);
    }
  }

  #load(accountId: string): Promise<Loaded> {
    let loading = this.#loaded.get(accountId);
    if (!loading) {
      loading = this.#store.all(accountId).then((geofences) => {
        const byId = new Map(geofences.map((geofence) => [geofence.id, geofence]));
        const shapes = new Map(geofences.map((geofence) => [geofence.id, parseGeofenceShape(geofence)]));
        const index = GeofenceIndex.build(geofences.map((geofence) => ({ id: geofence.id, tags: geofence.tags, shape: shapes.get(geofence.id)! })));
        return { index, byId, shapes };
      });
      loading.catch(() => this.#loaded.delete(accountId));
      this.#loaded.set(accountId, loading);
    }
    return loading;
  }
}

function hasEvery(tags: readonly string[], wanted: readonly string[] | undefined): boolean {
  return wanted === undefined || wanted.every((tag) => tags.includes(tag));
}

function build(base: { id: string; accountId: string; createdAt: string; updatedAt: string }, input: GeofenceInput): { geofence: Geofence; shape: GeofenceShape } {
  const shape = parseGeofenceShape({ geometry: input.geometry, circle: input.circle });
  const geofence: Geofence = {
    ...base,
    name: input.name,
    description: input.description ?? null,
    tags: [...new Set(input.tags ?? [])],
    ...(shape.kind === 'circle' ? { circle: { lat: shape.lat, lon: shape.lon, radius: shape.radius } } : { geometry: shape.geometry }),
  };
  return { geofence, shape };
}
