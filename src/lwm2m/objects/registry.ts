import { parsePath, type Lwm2mPath, type ModelLookup, type ObjectModel, type ResourceModel } from '../model.js';
import { parseDdf } from './ddf.js';
import { fromObjectJson } from './object-json.js';
import { SHIPPED_OBJECTS } from './shipped.generated.js';

/** Where an account's view of an object comes from: shipped with the product, or uploaded by the account. */
export type ObjectSource = 'shipped' | 'account';

/** An object definition an account uploaded. */
export interface StoredObjectModel {
  readonly accountId: string;
  readonly model: ObjectModel;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Persistence of uploaded definitions: one per account and object id. */
export interface ObjectModelStore {
  /** Every uploaded definition of every account. */
  all(): Promise<StoredObjectModel[]>;
  /** Inserts or replaces the account's definitions of these objects, all or none; `now` is an ISO time. */
  put(accountId: string, models: readonly ObjectModel[], now: string): Promise<void>;
  /** Removes the account's definition of the object; false when it had none. */
  delete(accountId: string, objectId: number): Promise<boolean>;
}

/** An object as one account sees it. */
export interface AccountObject {
  readonly model: ObjectModel;
  readonly source: ObjectSource;
}

/** Most object definitions one account may have uploaded (all of them are kept in memory). */
export const MAX_UPLOADS_PER_ACCOUNT = 1000;

/** An upload would take the account over its limit of uploaded definitions; nothing was stored. */
export class ObjectLimitError extends Error {
  readonly limit: number;

  constructor(limit: number) {
    super(`an account may have at most ${limit} uploaded object definitions; delete some first`);
    this.name = 'ObjectLimitError';
    this.limit = limit;
  }
}

/** Object and resource names of a path, where known. */
export interface PathNames {
  readonly object?: string;
  readonly resource?: string;
}

/**
 * The LwM2M object registry: the definitions shipped with the product, and per-account uploads that
 * override a shipped definition of the same object id for that account only (not for its sub-accounts).
 *
 * As a {@link ModelLookup} it answers with the shipped definitions; {@link lookupFor} gives an account's
 * view. Uploads are kept in memory (loaded by {@link load}) so look-ups stay synchronous for the codecs.
 */
export class ObjectRegistry implements ModelLookup {
  readonly #shipped: ReadonlyMap<number, ObjectModel>;
  readonly #store: ObjectModelStore | undefined;
  readonly #maxUploads: number;
  readonly #uploads = new Map<string, Map<number, StoredObjectModel>>();

  /**
   * @param shipped definitions every account sees (default: the ones shipped in `definitions/`)
   * @param store where uploads persist; without one, uploads live in memory only (tests)
   * @param maxUploadsPerAccount default {@link MAX_UPLOADS_PER_ACCOUNT}
   */
  constructor(options: { shipped?: readonly ObjectModel[]; store?: ObjectModelStore; maxUploadsPerAccount?: number } = {}) {
    const shipped = options.shipped ?? SHIPPED_OBJECTS.map(fromObjectJson);
    this.#shipped = new Map(shipped.map((model) => [model.id, model]));
    this.#store = options.store;
    this.#maxUploads = options.maxUploadsPerAccount ?? MAX_UPLOADS_PER_ACCOUNT;
  }

  /** Reads every account's uploads from the store; call once at start, before serving look-ups. */
  async load(): Promise<void> {
    if (!this.#store) return;
    this.#uploads.clear();
    for (const stored of await this.#store.all()) this.#accountUploads(stored.accountId).set(stored.model.id, stored);
  }

  /** A shipped object, or undefined. */
  object(objectId: number): ObjectModel | undefined {
    return this.#shipped.get(objectId);
  }

  /** A resource of a shipped object, or undefined. */
  resource(objectId: number, resourceId: number): ResourceModel | undefined {
    return this.#shipped.get(objectId)?.resources.get(resourceId);
  }

  /**
   * The account's view: its uploaded definition of an object id where it has one, the shipped one otherwise.
   * Reflects later uploads and deletions without being fetched again.
   *
   * @example
   * registry.lookupFor(accountId).resource(3, 9)?.name; // 'Battery Level'
   */
  lookupFor(accountId: string): ModelLookup {
    const object = (objectId: number) => this.#uploads.get(accountId)?.get(objectId)?.model ?? this.#shipped.get(objectId);
    return { object, resource: (objectId, resourceId) => object(objectId)?.resources.get(resourceId) };
  }

  /** One object as the account sees it, with where it comes from; undefined when neither has it. */
  get(accountId: string, objectId: number): AccountObject | undefined {
    const uploaded = this.#uploads.get(accountId)?.get(objectId);
    if (uploaded) return { model: uploaded.model, source: 'account' };
    const shipped = this.#shipped.get(objectId);
    return shipped && { model: shipped, source: 'shipped' };
  }

  /** Every object the account sees, in id order. */
  list(accountId: string): AccountObject[] {
    const ids = new Set([...this.#shipped.keys(), ...(this.#uploads.get(accountId)?.keys() ?? [])]);
    return [...ids].sort((a, b) => a - b).map((id) => this.get(accountId, id)!);
  }

  /**
   * Parses a DDF document and stores its objects as the account's definitions, replacing earlier uploads of
   * the same ids. Throws `DdfError` for an invalid document and {@link ObjectLimitError} past the account's
   * limit; nothing is stored then.
   */
  async upload(accountId: string, xml: string): Promise<ObjectModel[]> {
    const models = parseDdf(xml);
    const existing = this.#uploads.get(accountId);
    const added = models.filter((model) => !existing?.has(model.id)).length;
    if ((existing?.size ?? 0) + added > this.#maxUploads) throw new ObjectLimitError(this.#maxUploads);
    const now = new Date().toISOString();
    await this.#store?.put(accountId, models, now);
    const uploads = this.#accountUploads(accountId);
    for (const model of models) {
      uploads.set(model.id, { accountId, model, createdAt: uploads.get(model.id)?.createdAt ?? now, updatedAt: now });
    }
    return models;
  }

  /** True when the account has uploaded a definition of the object. */
  hasUpload(accountId: string, objectId: number): boolean {
    return this.#uploads.get(accountId)?.has(objectId) ?? false;
  }

  /** True when the object ships with the product. */
  isShipped(objectId: number): boolean {
    return this.#shipped.has(objectId);
  }

  /** Removes the account's uploaded definition (the shipped one, if any, shows again); false when there was none. */
  async remove(accountId: string, objectId: number): Promise<boolean> {
    // The store first: when it fails, memory still matches what is stored.
    const removedStored = this.#store ? await this.#store.delete(accountId, objectId) : false;
    const removedHere = this.#uploads.get(accountId)?.delete(objectId) ?? false;
    return removedStored || removedHere;
  }

  /**
   * Object and resource names of a path in the account's view, for events' `translateIds`.
   * Throws `RangeError` for text that is not an LwM2M path.
   *
   * @example
   * registry.translate(accountId, '/3/0/9'); // { object: 'Device', resource: 'Battery Level' }
   */
  translate(accountId: string, path: string | Lwm2mPath): PathNames {
    return translatePath(this.lookupFor(accountId), path);
  }

  #accountUploads(accountId: string): Map<number, StoredObjectModel> {
    let uploads = this.#uploads.get(accountId);
    if (!uploads) {
      uploads = new Map();
      this.#uploads.set(accountId, uploads);
    }
    return uploads;
  }
}

/**
 * Object and resource names of a path (`/3`, `/3/0`, `/3/0/9`, `/3/0/7/1`) from a model lookup; a name is
 * left out when the lookup does not know it. Throws `RangeError` for text that is not an LwM2M path.
 *
 * @example
 * translatePath(registry, '/3/0/9'); // { object: 'Device', resource: 'Battery Level' }
 */
export function translatePath(lookup: ModelLookup, path: string | Lwm2mPath): PathNames {
  const { objectId, resourceId } = typeof path === 'string' ? parsePath(path) : path;
  if (objectId === undefined) return {};
  const object = lookup.object(objectId)?.name;
  const resource = resourceId === undefined ? undefined : lookup.resource(objectId, resourceId)?.name;
  return { ...(object === undefined ? {} : { object }), ...(resource === undefined ? {} : { resource }) };
}
