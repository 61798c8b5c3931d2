import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import type { Scope } from './scope.js';
import type { Services } from './services.js';

export type JsonObject = Record<string, unknown>;

export interface Endpoint {
  readonly id: string;
  /** The device's identity within its service (LwM2M endpoint name, MQTT username, DevEUI, …). */
  readonly key: string;
  readonly serviceId: string;
  readonly accountId: string;
  /** `name` or `name:value`, unique, in the order given. */
  readonly tags: string[];
  readonly statusDetails: JsonObject;
  readonly parameters: JsonObject;
  /** Record every packet of this endpoint for debugging. */
  readonly trace: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Set by the device protocols (see `devices/presence.ts`), never by edits. */
  readonly state: EndpointState;
  /** When the device was last heard from; null before its first message. */
  readonly lastSeenAt: string | null;
}

export const ENDPOINT_STATES = ['connected', 'unavailable'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];

/** What a device protocol records when it hears from a device (one targeted write, not a full endpoint update). */
export interface PresenceChange {
  readonly state: EndpointState;
  readonly lastSeenAt: string;
  /** When silence from now on makes the device missing; null: never (no lifetime and no secondsBeforeMissing). */
  readonly missingAfter: string | null;
  /** Where the device was heard from now, when the protocol knows: replaces the recorded address. */
  readonly heardFrom?: HeardFrom | undefined;
  /**
   * Status details the protocol owns (`remoteAddr`, `lifetime`), set in the same write: one statement per
   * log-in instead of a read, a merge and two writes. Top-level values only, none null.
   */
  readonly details?: Readonly<Record<string, string | number>> | undefined;
}

/**
 * Where a device was last heard from, recorded by the device protocols alone (never by edits): the one
 * address the service sends that device anything at. The `remoteAddr` status detail only reports it.
 */
export interface HeardFrom {
  /** The service type whose server heard the device (`udp`, `coap`, `lwm2m`, …). */
  readonly protocol: string;
  /** `host:port` (IPv6 hosts in brackets). */
  readonly remoteAddr: string;
  /** Cluster mode: the node whose socket heard it, where sends to the device must go (docs/cluster.md). */
  readonly node?: string | undefined;
}

/** Which endpoints a search, count or bulk update covers; all conditions must hold. */
export interface EndpointFilter {
  readonly serviceId?: string | undefined;
  /** Each `name` (any value) or `name:value` (exactly) must be among the endpoint's tags. */
  readonly tags?: readonly string[] | undefined;
  readonly keyPrefix?: string | undefined;
  readonly hasStatusDetail?: readonly string[] | undefined;
  readonly missingStatusDetail?: readonly string[] | undefined;
  /** Only endpoints in this state (searches and counts; the state changes with the devices, not by edits). */
  readonly state?: EndpointState | undefined;
}

export type EndpointSort = 'key' | 'createdAt' | 'updatedAt';

export interface EndpointStore {
  /** Throws `IOTB_ENDPOINT_KEY_TAKEN` when the service has the key already. */
  insert(endpoint: Endpoint): Promise<void>;
  getById(accountId: string, id: string): Promise<Endpoint | undefined>;
  /** At most `limit` endpoints of the account with this key. */
  findByKey(accountId: string, key: string, serviceId: string | undefined, limit: number): Promise<Endpoint[]>;
  /** Throws `IOTB_ENDPOINT_KEY_TAKEN` when the new key is used in the service. */
  update(endpoint: Endpoint): Promise<void>;
  delete(id: string): Promise<void>;
  list(accountId: string, filter: EndpointFilter, page: PageRequest, sort: EndpointSort): Promise<Page<Endpoint>>;
  /**
   * At most `limit` of the account's endpoints in (key, id) order after `after` (from the start when undefined):
   * a walk over every endpoint that costs the same on the last page as on the first (the export).
   */
  listAfter(accountId: string, after: { key: string; id: string } | undefined, limit: number): Promise<Endpoint[]>;
  count(accountId: string, filter: EndpointFilter): Promise<number>;
  /** Endpoints of the account at `accountPath` and all its sub-accounts. */
  countTree(accountPath: string): Promise<number>;
  /** Applies `change` to every matching endpoint in one transaction; returns how many changed. */
  updateMany(accountId: string, filter: EndpointFilter, change: (endpoint: Endpoint) => Endpoint): Promise<number>;
  storageGet(endpointId: string, name: string): Promise<{ value: unknown; updatedAt: string } | undefined>;
  storagePut(endpointId: string, name: string, value: unknown, updatedAt: string): Promise<void>;
  storageDelete(endpointId: string, name: string): Promise<boolean>;
  storageList(endpointId: string): Promise<{ name: string; updatedAt: string }[]>;
  /** The stored objects of several of the account's endpoints at once, by endpoint id (the export). */
  storageOf(accountId: string, endpointIds: readonly string[]): Promise<Map<string, Record<string, unknown>>>;
  /** The service's endpoints among these keys (an import's look-up of a batch). */
  byKeys(accountId: string, serviceId: string, keys: readonly string[]): Promise<Endpoint[]>;
  /**
   * Inserts endpoints in one transaction (an import's bulk mode, a bulk creation): all of them, or none when one is
   * refused; with the device password hashes of those that have one (by endpoint id), in the same transaction.
   */
  insertMany(endpoints: readonly Endpoint[], passwordHashes?: ReadonlyMap<string, string>): Promise<void>;
  /** The endpoint's device password hash (`hashPassword` output) and when it was set; undefined when none is set. */
  passwordHash(endpointId: string): Promise<{ hash: string; updatedAt: string } | undefined>;
  /** Sets or replaces the endpoint's device password hash. */
  setPasswordHash(endpointId: string, hash: string, updatedAt: string): Promise<void>;
  /** The stored password hashes of those of these endpoints that have one (export). */
  passwordHashes(endpointIds: readonly string[]): Promise<Map<string, string>>;
  /** Removes the endpoint's device password hash; false when none was set. */
  deletePasswordHash(endpointId: string): Promise<boolean>;
  /** Endpoints with this key in any account's services of `serviceType` (device log-in on a shared port), oldest first. */
  findDevices(serviceType: string, key: string, limit: number): Promise<Endpoint[]>;
  /** Records presence; with `details`, returns the status details as now stored (undefined for an unknown endpoint). */
  setPresence(endpointId: string, change: PresenceChange): Promise<JsonObject | undefined>;
  /** Where the device was last heard from (see `HeardFrom`); undefined before it was, or after `forgetHeardFrom`. */
  heardFrom(endpointId: string): Promise<HeardFrom | undefined>;
  /** Forgets the recorded address (another device now uses it). */
  forgetHeardFrom(endpointId: string): Promise<void>;
  /** Merges platform-set status details (RFC 7396) into the stored ones in one short transaction; returns the result. */
  mergeStatusDetails(endpointId: string, details: JsonObject, updatedAt: string): Promise<JsonObject | undefined>;
  /** Connected endpoints whose `missingAfter` is before `now`, oldest first. */
  listMissing(now: string, limit: number): Promise<Endpoint[]>;
  /**
   * Cluster mode: a node died; its connected devices of these protocols (whose connection was its own) become
   * unavailable, each once whichever node asks: returns those it changed.
   */
  releaseHeardBy(node: string, protocols: readonly string[]): Promise<{ endpoint: Endpoint; protocol: string }[]>;
}

export interface EndpointInput {
  readonly key: string;
  readonly serviceId: string;
  readonly tags?: readonly string[] | undefined;
  readonly statusDetails?: JsonObject | undefined;
  readonly parameters?: JsonObject | undefined;
  readonly trace?: boolean | undefined;
}

/** A partial update. `statusDetails` and `parameters` merge (RFC 7396: `null` removes a key). */
export interface EndpointPatch {
  readonly key?: string | undefined;
  readonly serviceId?: string | undefined;
  readonly tags?: readonly string[] | undefined;
  readonly addTags?: readonly string[] | undefined;
  readonly removeTags?: readonly string[] | undefined;
  readonly statusDetails?: JsonObject | undefined;
  readonly parameters?: JsonObject | undefined;
  readonly trace?: boolean | undefined;
}

/** What a bulk update may change over a filter. */
export interface EndpointBulkChange {
  /** Sets (a number) or removes (null) the `secondsBeforeMissing` status detail. */
  readonly secondsBeforeMissing?: number | null | undefined;
  readonly addTags?: readonly string[] | undefined;
  readonly removeTags?: readonly string[] | undefined;
}

/** Status details the platform itself reads; their types are checked wherever they are written. */
const NAMED_STATUS_DETAILS: Record<string, (value: unknown) => boolean> = {
  dateLastKeepAlive: (value) => typeof value === 'string' && !Number.isNaN(Date.parse(value)),
  remoteAddr: (value) => typeof value === 'string',
  lifetime: (value) => Number.isInteger(value) && (value as number) >= 0,
  secondsBeforeMissing: (value) => Number.isInteger(value) && (value as number) >= 0,
};

/**
 * Status details only the device protocols write (SPEC: set on registration, keep-alive, each message):
 * they report what a device did, so the API and scripts may read them but not set, change or remove them.
 * `remoteAddr` once decided where `udp.send` went (a tenant could aim the service at any address); sends now
 * use the address presence records apart from the status details, and this keeps the report truthful too.
 * `secondsBeforeMissing` is the user's setting and stays writable.
 */
/** Status details only the platform sets: an export leaves them out, an import never sets them. */
export const PLATFORM_STATUS_DETAILS = ['remoteAddr', 'lifetime', 'dateLastKeepAlive'] as const;

export const TAG_PATTERN = /^[^:\s][^:]{0,127}(:.{1,256})?$/;

/** Devices of an account, addressed by id or by `k.<key>`, with their tags, status details, parameters and storage. */
export class Endpoints {
  readonly #store: EndpointStore;
  readonly #services: Services;
  constructor(store: EndpointStore, services: Services) {
    this.#store = store;
    this.#services = services;
  }

  async create(scope: Scope, input: EndpointInput): Promise<Endpoint> {
    await this.checkService(scope, input.serviceId);
    const endpoint = this.build(scope, input);
    await this.#store.insert(endpoint);
    return endpoint;
  }

  /**
   * The endpoint `ref` names: its id, or `k.<key>`. A key used in several services of the account needs
   * `serviceId` to choose (409 otherwise). 404 for unknown endpoints and for other accounts' endpoints alike.
   */
  async get(scope: Scope, ref: string, serviceId?: string): Promise<Endpoint> {
    if (ref.startsWith('k.')) {
      const found = await this.#store.findByKey(scope.accountId, ref.slice(2), serviceId, 2);
      if (found.length > 1) throw new AppError('IOTB_ENDPOINT_KEY_AMBIGUOUS', undefined, { serviceIds: found.map((e) => e.serviceId) });
      if (found[0]) return found[0];
    } else {
      const endpoint = await this.#store.getById(scope.accountId, ref);
      if (endpoint && (serviceId === undefined || endpoint.serviceId === serviceId)) return endpoint;
    }
    throw new AppError('IOTB_ENDPOINT_NOT_FOUND');
  }

  /** For platform components acting on an event of the account (the trigger engine): no principal involved. */
  async byId(accountId: string, id: string): Promise<Endpoint | undefined> {
    return this.#store.getById(accountId, id);
  }

  list(scope: Scope, filter: EndpointFilter, page: PageRequest, sort: EndpointSort = 'key'): Promise<Page<Endpoint>> {
    return this.#store.list(scope.accountId, filter, page, sort);
  }

  /** Every endpoint of the acting account in key order, `pageSize` read at a time (the export). */
  async *walk(scope: Scope, pageSize: number): AsyncGenerator<Endpoint[]> {
    let after: Endpoint | undefined;
    for (;;) {
      const page = await this.#store.listAfter(scope.accountId, after && { key: after.key, id: after.id }, pageSize);
      if (page.length > 0) yield page;
      if (page.length < pageSize) return;
      after = page[page.length - 1];
    }
  }

  /** How many endpoints match in the acting account; with `total`, also how many the account and its sub-accounts have. */
  async count(scope: Scope, filter: EndpointFilter, options: { total: boolean }): Promise<{ count: number; total?: number }> {
    const count = await this.#store.count(scope.accountId, filter);
    return options.total ? { count, total: await this.#store.countTree(scope.accountPath) } : { count };
  }

  /** Replaces every field but the id: what is left out is emptied. */
  async replace(scope: Scope, ref: string, input: EndpointInput): Promise<Endpoint> {
    const current = await this.get(scope, ref);
    if (input.serviceId !== current.serviceId) await this.#services.get(scope, input.serviceId);
    return this.#save({
      ...current,
      key: input.key,
      serviceId: input.serviceId,
      tags: checkedTags(input.tags ?? []),
      statusDetails: checkedStatusDetails(replacedDetails(current.statusDetails, input.statusDetails ?? {})),
      parameters: input.parameters ?? {},
      trace: input.trace ?? false,
    });
  }

  async patch(scope: Scope, ref: string, patch: EndpointPatch): Promise<Endpoint> {
    const current = await this.get(scope, ref);
    if (patch.serviceId !== undefined && patch.serviceId !== current.serviceId) await this.#services.get(scope, patch.serviceId);
    const tags = changeTags(patch.tags ?? current.tags, patch.addTags, patch.removeTags);
    return this.#save({
      ...current,
      key: patch.key ?? current.key,
      serviceId: patch.serviceId ?? current.serviceId,
      tags,
      statusDetails: patch.statusDetails ? checkedStatusDetails(mergePatch(current.statusDetails, unchangedPlatformDetails(current.statusDetails, patch.statusDetails))) : current.statusDetails,
      parameters: patch.parameters ? mergePatch(current.parameters, patch.parameters) : current.parameters,
      trace: patch.trace ?? current.trace,
    });
  }

  /** Changes every endpoint matching `filter` in the acting account; returns how many changed. */
  async bulkUpdate(scope: Scope, filter: EndpointFilter, change: EndpointBulkChange): Promise<{ updated: number }> {
    if (filter.serviceId !== undefined) await this.#services.get(scope, filter.serviceId);
    const addTags = change.addTags && checkedTags(change.addTags);
    const updatedAt = new Date().toISOString();
    const updated = await this.#store.updateMany(scope.accountId, filter, (endpoint) => ({
      ...endpoint,
      tags: changeTags(endpoint.tags, addTags, change.removeTags),
      statusDetails:
        change.secondsBeforeMissing === undefined
          ? endpoint.statusDetails
          : checkedStatusDetails(mergePatch(endpoint.statusDetails, { secondsBeforeMissing: change.secondsBeforeMissing })),
      updatedAt,
    }));
    return { updated };
  }

  async delete(scope: Scope, ref: string, serviceId?: string): Promise<void> {
    const endpoint = await this.get(scope, ref, serviceId);
    await this.#store.delete(endpoint.id);
  }

  /** A stored object of the endpoint; 404 (`IOTB_ENDPOINT_STORAGE_NOT_FOUND`) when there is none. */
  async storageGet(scope: Scope, ref: string, name: string, serviceId?: string): Promise<{ value: unknown; updatedAt: string }> {
    const endpoint = await this.get(scope, ref, serviceId);
    const stored = await this.#store.storageGet(endpoint.id, name);
    if (!stored) throw new AppError('IOTB_ENDPOINT_STORAGE_NOT_FOUND');
    return stored;
  }

  async storagePut(scope: Scope, ref: string, name: string, value: unknown, serviceId?: string): Promise<{ value: unknown; updatedAt: string }> {
    const endpoint = await this.get(scope, ref, serviceId);
    const updatedAt = new Date().toISOString();
    await this.#store.storagePut(endpoint.id, name, value, updatedAt);
    return { value, updatedAt };
  }

  async storageDelete(scope: Scope, ref: string, name: string, serviceId?: string): Promise<void> {
    const endpoint = await this.get(scope, ref, serviceId);
    if (!(await this.#store.storageDelete(endpoint.id, name))) throw new AppError('IOTB_ENDPOINT_STORAGE_NOT_FOUND');
  }

  /** The stored objects of the account's endpoints among `endpointIds`, by endpoint id. */
  storageOf(scope: Scope, endpointIds: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    return this.#store.storageOf(scope.accountId, endpointIds);
  }

  /**
   * A new endpoint of the account checked as `create` checks it, not stored: an import's bulk mode builds a batch
   * and stores it with `insertMany`. The service must be the account's (the caller checked it once).
   */
  build(scope: Scope, input: EndpointInput): Endpoint {
    const now = new Date().toISOString();
    return {
      id: newId(),
      key: input.key,
      serviceId: input.serviceId,
      accountId: scope.accountId,
      tags: checkedTags(input.tags ?? []),
      statusDetails: checkedStatusDetails(replacedDetails({}, input.statusDetails ?? {})),
      parameters: input.parameters ?? {},
      trace: input.trace ?? false,
      createdAt: now,
      updatedAt: now,
      state: 'unavailable',
      lastSeenAt: null,
    };
  }

  /** The service's endpoints among `keys`, by key. */
  async byKeys(scope: Scope, serviceId: string, keys: readonly string[]): Promise<Map<string, Endpoint>> {
    const found = keys.length === 0 ? [] : await this.#store.byKeys(scope.accountId, serviceId, keys);
    return new Map(found.map((endpoint) => [endpoint.key, endpoint]));
  }

  /** Throws as `create` does when `serviceId` is not one of the account's services (what `build` leaves to its caller). */
  async checkService(scope: Scope, serviceId: string): Promise<void> {
    await this.#services.get(scope, serviceId);
  }

  /** Stores endpoints `build` made, in one transaction: all or none; `passwordHashes` (by endpoint id) with them. */
  async insertMany(scope: Scope, endpoints: readonly Endpoint[], passwordHashes?: ReadonlyMap<string, string>): Promise<void> {
    if (endpoints.some((endpoint) => endpoint.accountId !== scope.accountId)) throw new AppError('IOTB_INTERNAL');
    await this.#store.insertMany(endpoints, passwordHashes);
  }

  async storageList(scope: Scope, ref: string, serviceId?: string): Promise<{ name: string; updatedAt: string }[]> {
    const endpoint = await this.get(scope, ref, serviceId);
    return this.#store.storageList(endpoint.id);
  }

  async #save(endpoint: Endpoint): Promise<Endpoint> {
    const saved = { ...endpoint, updatedAt: new Date().toISOString() };
    await this.#store.update(saved);
    return saved;
  }
}

/** Splits `name` / `name:value` (the value may itself contain `:`). */
export function parseTag(tag: string): { name: string; value: string } {
  const colon = tag.indexOf(':');
  return colon < 0 ? { name: tag, value: '' } : { name: tag.slice(0, colon), value: tag.slice(colon + 1) };
}

function checkedTags(tags: readonly string[]): string[] {
  const bad = tags.filter((tag) => !TAG_PATTERN.test(tag));
  if (bad.length > 0) {
    throw new AppError('IOTB_REQUEST_VALIDATION', 'A tag is "name" or "name:value"; the name has no ":" or leading space', { tags: bad });
  }
  return [...new Set(tags)];
}

function changeTags(tags: readonly string[], add: readonly string[] | undefined, remove: readonly string[] | undefined): string[] {
  const result = checkedTags([...tags, ...(add ?? [])]);
  if (!remove || remove.length === 0) return result;
  // Removing `name` removes every `name:*` tag; removing `name:value` removes that one.
  return result.filter((tag) => !remove.some((r) => r === tag || (!r.includes(':') && parseTag(tag).name === r)));
}

/**
 * A client's status-detail patch, refused (400 `IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY`) when it would set,
 * change or remove a platform-written detail. Sending back the value the endpoint has is no change: a
 * client may PATCH or PUT what it read.
 */
function unchangedPlatformDetails(current: JsonObject, patch: JsonObject): JsonObject {
  for (const name of PLATFORM_STATUS_DETAILS) {
    const value = patch[name];
    if (value === undefined || value === current[name] || (value === null && current[name] === undefined)) continue;
    throw new AppError('IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY', `Status detail ${name} is written by the platform only; it cannot be set, changed or removed`, {
      statusDetail: name,
    });
  }
  return patch;
}

/** A replacement (POST, PUT) of a client's status details: platform-written ones are kept as they are, never taken from the request. */
function replacedDetails(current: JsonObject, requested: JsonObject): JsonObject {
  unchangedPlatformDetails(current, requested);
  const details = { ...requested };
  for (const name of PLATFORM_STATUS_DETAILS) {
    if (current[name] === undefined) delete details[name];
    else details[name] = current[name];
  }
  return details;
}

function checkedStatusDetails(details: JsonObject): JsonObject {
  for (const [name, valid] of Object.entries(NAMED_STATUS_DETAILS)) {
    if (details[name] !== undefined && !valid(details[name])) {
      throw new AppError('IOTB_REQUEST_VALIDATION', `Status detail ${name} has the wrong type`, { statusDetail: name, value: details[name] });
    }
  }
  return details;
}

/** JSON Merge Patch (RFC 7396) of one object level into another: `null` removes, objects merge, the rest replaces. */
export function mergePatch(target: JsonObject, patch: JsonObject): JsonObject {
  const result: JsonObject = { ...target };
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else if (isPlainObject(value) && isPlainObject(result[name])) result[name] = mergePatch(result[name], value);
    else result[name] = isPlainObject(value) ? mergePatch({}, value) : value;
  }
  return result;
}

function isPlainObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
