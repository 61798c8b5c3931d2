import type { Endpoints } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { checkLatLon } from './geodesy.js';
import type { EndpointPosition, PositionStore } from './model.js';

/** Endpoints' last known positions: set by geofence evaluations, `PUT /endpoints/{ref}/position` and scripts. */
export class Positions {
  readonly #store: PositionStore;
  readonly #endpoints: Endpoints;

  constructor(store: PositionStore, endpoints: Endpoints) {
    this.#store = store;
    this.#endpoints = endpoints;
  }

  async get(scope: Scope, endpointRef: string): Promise<EndpointPosition> {
    const endpoint = await this.#endpoints.get(scope, endpointRef);
    const position = await this.#store.get(scope.accountId, endpoint.id);
    if (!position) throw new AppError('IOTB_POSITION_NOT_FOUND');
    return position;
  }

  async set(scope: Scope, endpointRef: string, input: { lat: unknown; lon: unknown; accuracy?: number | undefined }, source: string): Promise<EndpointPosition> {
    const { lat, lon } = checkLatLon(input, 'position');
    if (input.accuracy !== undefined && !(Number.isFinite(input.accuracy) && input.accuracy >= 0)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'accuracy must be a number of metres, 0 or more', { field: 'accuracy' });
    }
    const endpoint = await this.#endpoints.get(scope, endpointRef);
    const position: EndpointPosition = { endpointId: endpoint.id, accountId: endpoint.accountId, lat, lon, accuracy: input.accuracy ?? null, source, at: isoTime(Date.now()) };
    await this.#store.put(position);
    return position;
  }

  /** The account's positions, newest first; `bbox` is `minLon,minLat,maxLon,maxLat`. */
  list(scope: Scope, options: { bbox?: string | undefined; limit: number }): Promise<EndpointPosition[]> {
    return this.#store.list(scope.accountId, { bbox: options.bbox === undefined ? undefined : parseBbox(options.bbox), limit: options.limit });
  }
}

function parseBbox(text: string): [number, number, number, number] {
  const values = text.split(',').map(Number);
  const [minLon, minLat, maxLon, maxLat] = values;
  const valid =
    values.length === 4 &&
    values.every(Number.isFinite) &&
    minLon! >= -180 && maxLon! <= 180 && minLon! <= 180 && maxLon! >= -180 &&
    minLat! >= -90 && maxLat! <= 90 && minLat! <= maxLat!;
  if (!valid) throw new AppError('IOTB_REQUEST_VALIDATION', 'bbox must be minLon,minLat,maxLon,maxLat within [-180, 180] and [-90, 90], minLat ≤ maxLat', { field: 'bbox' });
  return [minLon!, minLat!, maxLon!, maxLat!];
}
