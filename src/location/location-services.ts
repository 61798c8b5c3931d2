import type { Readable } from 'node:stream';
import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { LOCATION_SERVICE_TYPES, type LocationService, type LocationServiceRecord, type LocationServiceStore, type LocationServiceType } from './model.js';
import { readOpenCellIdCsv, readWifiCsv } from './opencellid-csv.js';

/** The address each HTTP provider type is reached at unless the service names another. */
export const DEFAULT_PROVIDER_URLS: Readonly<Record<Exclude<LocationServiceType, 'embedded'>, string>> = {
  google: 'https://www.googleapis.com/geolocation/v1/geolocate',
  unwiredlabs: 'https://us1.unwiredlabs.com/v2/process.php',
  nominatim: 'https://nominatim.openstreetmap.org',
};

/** Provider types that need the account's API key. */
const NEEDS_KEY: ReadonlySet<LocationServiceType> = new Set(['google', 'unwiredlabs']);

/** Location services one account may have. */
export const LOCATION_SERVICES_MAX = 20;

export interface LocationServiceInput {
  readonly name: string;
  readonly type: LocationServiceType;
  readonly url?: string | null | undefined;
  readonly apiKey?: string | null | undefined;
  readonly position?: number | undefined;
}

export interface LocationServiceChange {
  readonly name?: string | undefined;
  readonly url?: string | null | undefined;
  /** A new key; null removes it; left out keeps it (keys are write-only). */
  readonly apiKey?: string | null | undefined;
  readonly position?: number | undefined;
}

/** Where an import stands: one at a time per service, visible while it runs (GET /location/services/{id}). */
export interface ImportStatus {
  readonly state: 'running' | 'done' | 'failed';
  readonly format: 'opencellid' | 'wifi';
  readonly rows: number;
  readonly rejected: number;
  readonly bytes: number;
  readonly firstErrors: Array<{ line: number; message: string }>;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly error?: string;
}

export interface LocationServicesOptions {
  /** Throws `IOTB_OUTBOUND_ADDRESS_REFUSED` for a URL the service would not connect to (OutboundHttp.checkUrl). */
  readonly checkUrl: (url: string) => void;
}

/**
 * The account's location providers, in fallback order (`/location/services`): the embedded database of cell
 * and Wi-Fi positions it imports, and HTTP providers with the account's API key, which is never shown again.
 */
export class LocationServices {
  readonly #store: LocationServiceStore;
  readonly #options: LocationServicesOptions;
  readonly #imports = new Map<string, ImportStatus>();
  /** Each account's services as every lookup reads them; dropped on any change made here (one process). */
  readonly #cached = new Map<string, Promise<LocationServiceRecord[]>>();
  readonly #listeners: Array<() => void> = [];

  constructor(store: LocationServiceStore, options: LocationServicesOptions) {
    this.#store = store;
    this.#options = options;
  }

  /** Tells `listener` after a service changes or an import ends: answers cached from them may be wrong now. */
  onChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  async list(scope: Scope): Promise<LocationService[]> {
    return (await this.#store.list(scope.accountId)).map(shown);
  }

  /** The account's services with their keys, in fallback order: for the providers, never for the API. */
  records(accountId: string): Promise<LocationServiceRecord[]> {
    let records = this.#cached.get(accountId);
    if (!records) {
      records = this.#store.list(accountId);
      records.catch(() => this.#cached.delete(accountId));
      this.#cached.set(accountId, records);
    }
    return records;
  }

  async get(scope: Scope, id: string): Promise<LocationService & { positions?: { cells: number; wifi: number }; import?: ImportStatus }> {
    const record = await this.#record(scope, id);
    if (record.type !== 'embedded') return shown(record);
    const status = this.#imports.get(record.id);
    return { ...shown(record), positions: await this.#store.countPositions(record.id), ...(status && { import: status }) };
  }

  async create(scope: Scope, input: LocationServiceInput): Promise<LocationService> {
    const existing = await this.#store.list(scope.accountId);
    if (existing.length >= LOCATION_SERVICES_MAX) throw new AppError('IOTB_REQUEST_VALIDATION', `An account has at most ${LOCATION_SERVICES_MAX} location services`, { field: 'type' });
    if (!LOCATION_SERVICE_TYPES.includes(input.type)) throw new AppError('IOTB_REQUEST_VALIDATION', `type must be one of ${LOCATION_SERVICE_TYPES.join(', ')}`, { field: 'type' });
    const now = Date.now();
    const record: LocationServiceRecord = {
      id: newId(),
      accountId: scope.accountId,
      name: input.name,
      type: input.type,
      position: input.position ?? (existing.reduce((last, service) => Math.max(last, service.position), -1) + 1),
      url: this.#url(input.type, input.url),
      apiKey: input.apiKey ?? null,
      createdAt: now,
      updatedAt: now,
    };
    checkKey(record);
    await this.#store.insert(record);
    this.#changed(scope.accountId);
    return shown(record);
  }

  async update(scope: Scope, id: string, change: LocationServiceChange): Promise<LocationService> {
    const record = await this.#record(scope, id);
    const updated: LocationServiceRecord = {
      ...record,
      name: change.name ?? record.name,
      position: change.position ?? record.position,
      url: change.url === undefined ? record.url : this.#url(record.type, change.url),
      apiKey: change.apiKey === undefined ? record.apiKey : change.apiKey,
      updatedAt: Date.now(),
    };
    checkKey(updated);
    await this.#store.update(updated);
    this.#changed(scope.accountId);
    return shown(updated);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    if (this.#imports.get(id)?.state === 'running') throw new AppError('IOTB_LOCATION_IMPORT_BUSY');
    if (!(await this.#store.delete(scope.accountId, id))) throw new AppError('IOTB_LOCATION_SERVICE_NOT_FOUND');
    this.#imports.delete(id);
    this.#changed(scope.accountId);
  }

  /**
   * Imports cell positions in OpenCelliD's CSV columns (or Wi-Fi positions, `mac,lon,lat,range`) into an
   * embedded service, streamed in batches; a bad row is counted and skipped. `replace` forgets the service's
   * earlier positions first.
   */
  async import(scope: Scope, id: string, input: Readable, options: { format: 'opencellid' | 'wifi'; replace: boolean }): Promise<ImportStatus> {
    const record = await this.#record(scope, id);
    if (record.type !== 'embedded') throw new AppError('IOTB_REQUEST_VALIDATION', 'Only an embedded location service imports positions', { field: 'id' });
    if (this.#imports.get(id)?.state === 'running') throw new AppError('IOTB_LOCATION_IMPORT_BUSY');
    let status: ImportStatus = { state: 'running', format: options.format, rows: 0, rejected: 0, bytes: 0, firstErrors: [], startedAt: isoTime(Date.now()), finishedAt: null };
    this.#imports.set(id, status);
    try {
      if (options.replace) await this.#store.clearPositions(id);
      const onProgress = (progress: { rows: number; rejected: number; bytes: number }) => {
        status = { ...status, ...progress };
        this.#imports.set(id, status);
      };
      const result =
        options.format === 'wifi'
          ? await readWifiCsv(input, (rows) => this.#store.putWifi(id, rows), { onProgress })
          : await readOpenCellIdCsv(input, (rows) => this.#store.putCells(id, rows), { onProgress });
      status = { ...status, state: 'done', rows: result.rows, rejected: result.rejected, firstErrors: [...result.firstErrors], finishedAt: isoTime(Date.now()) };
      return status;
    } catch (error) {
      status = { ...status, state: 'failed', finishedAt: isoTime(Date.now()), error: (error as Error).message };
      throw error;
    } finally {
      this.#imports.set(id, status);
      this.#changed(scope.accountId);
    }
  }

  #changed(accountId: string): void {
    this.#cached.delete(accountId);
    for (const listener of this.#listeners) listener();
  }

  async #record(scope: Scope, id: string): Promise<LocationServiceRecord> {
    const record = await this.#store.get(scope.accountId, id);
    if (!record) throw new AppError('IOTB_LOCATION_SERVICE_NOT_FOUND');
    return record;
  }

  #url(type: LocationServiceType, url: string | null | undefined): string | null {
    if (type === 'embedded') {
      if (url) throw new AppError('IOTB_REQUEST_VALIDATION', 'An embedded location service has no url', { field: 'url' });
      return null;
    }
    const chosen = url ?? DEFAULT_PROVIDER_URLS[type];
    let parsed: URL;
    try {
      parsed = new URL(chosen);
    } catch {
      throw new AppError('IOTB_REQUEST_VALIDATION', 'url must be an http:// or https:// URL', { field: 'url' });
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new AppError('IOTB_REQUEST_VALIDATION', 'url must be an http:// or https:// URL', { field: 'url' });
    if (parsed.username || parsed.password) throw new AppError('IOTB_REQUEST_VALIDATION', 'url must not hold credentials: give the key as apiKey', { field: 'url' });
    this.#options.checkUrl(chosen);
    return chosen.replace(/\/+$/, '');
  }
}

function checkKey(record: LocationServiceRecord): void {
  if (record.type === 'embedded' && record.apiKey !== null) throw new AppError('IOTB_REQUEST_VALIDATION', 'An embedded location service has no apiKey', { field: 'apiKey' });
  if (NEEDS_KEY.has(record.type) && !record.apiKey) throw new AppError('IOTB_REQUEST_VALIDATION', `A ${record.type} location service needs the account's apiKey`, { field: 'apiKey' });
}

/** What the API shows: everything but the key. */
function shown(record: LocationServiceRecord): LocationService {
  return {
    id: record.id,
    accountId: record.accountId,
    name: record.name,
    type: record.type,
    position: record.position,
    url: record.url,
    hasApiKey: record.apiKey !== null,
    createdAt: isoTime(record.createdAt),
    updatedAt: isoTime(record.updatedAt),
  };
}
