import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import type { Scope } from './scope.js';

export const SERVICE_TYPES = ['lwm2m', 'coap', 'mqtt', 'udp', 'tcp', 'lora', 'http'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

export const KEEP_ALIVE_MODES = ['do-nothing', 'statusDetail', 'touch', 'event'] as const;
export type KeepAliveMode = (typeof KEEP_ALIVE_MODES)[number];

/**
 * A service's options: free-form JSON that each protocol reads and checks (its `…-options.ts`). The CoAP
 * ones below are stored with their defaults on LwM2M and CoAP services.
 */
export interface ServiceOptions {
  /** Treat every LWM2M device of the service as in queue mode; reapplied on each registration update. */
  readonly forceQueueMode?: boolean;
  /** What a keep-alive (CoAP empty CON ping) does: see SPEC "States and transitions". */
  readonly keepAliveMode?: KeepAliveMode;
  /** Largest CoAP payload sent in one message before block-wise transfer is used (bytes). */
  readonly coapMaxMessageSize?: number;
  readonly [option: string]: unknown;
}

/** The types whose services store DEFAULT_SERVICE_OPTIONS (the others never read them). */
const COAP_TYPES: readonly ServiceType[] = ['lwm2m', 'coap'];

export const DEFAULT_SERVICE_OPTIONS = {
  forceQueueMode: false,
  keepAliveMode: 'statusDetail',
  coapMaxMessageSize: 1024,
} as const satisfies ServiceOptions;

export interface Service {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly type: ServiceType;
  readonly options: ServiceOptions;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface ServiceStore {
  insert(service: Service): Promise<void>;
  get(accountId: string, id: string): Promise<Service | undefined>;
  /** The service with this id in any account (platform components routing device traffic). */
  find(id: string): Promise<Service | undefined>;
  /** Every service of `type` in every account (device servers on a shared port). */
  listByType(type: ServiceType): Promise<Service[]>;
  list(accountId: string, filter: { type?: ServiceType | undefined }, page: PageRequest): Promise<Page<Service>>;
  update(service: Service): Promise<void>;
  endpointCount(serviceId: string): Promise<number>;
  /** Deletes the service and its endpoints. */
  delete(id: string): Promise<void>;
}

export interface ServiceInput {
  readonly name: string;
  readonly type: ServiceType;
  readonly options?: Partial<ServiceOptions> | undefined;
}

/** Told which service was created, replaced or deleted, here or (`elsewhere`) on another node of a cluster. */
export type ServiceChangeListener = (service: { readonly id: string }, elsewhere: boolean) => void;

/** Connector instances: one per protocol set-up an account runs, owning its endpoints. */
export class Services {
  readonly #store: ServiceStore;
  readonly #listeners: ServiceChangeListener[] = [];
  readonly #checks = new Map<ServiceType, (options: ServiceOptions) => void>();

  constructor(store: ServiceStore) {
    this.#store = store;
  }

  /**
   * A protocol's check of its own options (it throws a 400 naming the bad option), run when a service of
   * `type` is created or replaced; registered by the device server of that protocol.
   */
  checkOptions(type: ServiceType, check: (options: ServiceOptions) => void): void {
    this.#checks.set(type, check);
  }

  /** Device servers that cache services (routing tables) drop them here, for changes here and on other nodes. */
  onChange(listener: ServiceChangeListener): void {
    this.#listeners.push(listener);
  }

  /**
   * The service with this id whatever its account, for platform components that authenticate the caller
   * themselves (LoRa webhooks check the service's secret); undefined when there is none.
   */
  find(id: string): Promise<Service | undefined> {
    return this.#store.find(id);
  }

  /** Every service of a protocol across accounts: what a shared device port routes to. */
  allOfType(type: ServiceType): Promise<Service[]> {
    return this.#store.listByType(type);
  }

  async create(scope: Scope, input: ServiceInput): Promise<Service> {
    const now = new Date().toISOString();
    const service: Service = {
      id: newId(),
      accountId: scope.accountId,
      name: input.name,
      type: input.type,
      options: this.#options(input),
      createdAt: now,
      updatedAt: now,
    };
    await this.#store.insert(service);
    this.#changed(service);
    return service;
  }

  list(scope: Scope, filter: { type?: ServiceType | undefined }, page: PageRequest): Promise<Page<Service>> {
    return this.#store.list(scope.accountId, filter, page);
  }

  /** The service, if it belongs to the acting account; 404 otherwise (also for other accounts' services). */
  async get(scope: Scope, id: string): Promise<Service> {
    const service = await this.#store.get(scope.accountId, id);
    if (!service) throw new AppError('IOTB_SERVICE_NOT_FOUND');
    return service;
  }

  /**
   * Replaces name, type and options; options left out fall back to their defaults. The type changes only while
   * the service has no endpoints: their keys were checked against the old type's devices, and a key another
   * account's device of the new type uses would then take that device over (security.md "Endpoint keys").
   */
  async replace(scope: Scope, id: string, input: ServiceInput): Promise<Service> {
    const current = await this.get(scope, id);
    if (input.type !== current.type) {
      const endpoints = await this.#store.endpointCount(id);
      if (endpoints > 0) throw new AppError('IOTB_SERVICE_NOT_EMPTY', `The type of a service with endpoints cannot change (${current.type} to ${input.type}); move or delete its endpoints first`, { endpoints });
    }
    const service: Service = {
      ...current,
      name: input.name,
      type: input.type,
      options: this.#options(input),
      updatedAt: new Date().toISOString(),
    };
    await this.#store.update(service);
    this.#changed(service);
    return service;
  }

  /** Deletes a service; refuses (409) while it has endpoints unless `cascade`, which deletes them too. */
  async delete(scope: Scope, id: string, options: { cascade: boolean }): Promise<void> {
    const service = await this.get(scope, id);
    if (!options.cascade) {
      const endpoints = await this.#store.endpointCount(id);
      if (endpoints > 0) {
        throw new AppError('IOTB_SERVICE_NOT_EMPTY', 'The service still has endpoints; delete them first or pass ?cascade=true', { endpoints });
      }
    }
    await this.#store.delete(id);
    this.#changed(service);
  }

  #options(input: ServiceInput): ServiceOptions {
    const options: ServiceOptions = { ...(COAP_TYPES.includes(input.type) ? DEFAULT_SERVICE_OPTIONS : {}), ...input.options };
    this.#checks.get(input.type)?.(options);
    return options;
  }

  /** Another node of a cluster changed this service: caches here forget it (docs/cluster.md). */
  changedElsewhere(serviceId: string): void {
    for (const listener of this.#listeners) listener({ id: serviceId }, true);
  }

  #changed(service: Service): void {
    for (const listener of this.#listeners) listener(service, false);
  }
}
