import { AppError } from '../errors.js';
import { newId } from './ids.js';
import type { Page, PageRequest } from './pagination.js';
import type { Scope } from './scope.js';

export const SERVICE_TYPES = ['lwm2m', 'coap', 'mqtt', 'udp', 'tcp', 'lora', 'http'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

export const KEEP_ALIVE_MODES = ['do-nothing', 'statusDetail', 'touch', 'event'] as const;
export type KeepAliveMode = (typeof KEEP_ALIVE_MODES)[number];

/** Options every service has; protocol-specific options sit beside them. */
export interface ServiceOptions {
  /** Treat every LWM2M device of the service as in queue mode; reapplied on each registration update. */
  readonly forceQueueMode: boolean;
  /** What a keep-alive (CoAP empty CON ping) does: see SPEC "States and transitions". */
  readonly keepAliveMode: KeepAliveMode;
  /** Largest CoAP payload sent in one message before block-wise transfer is used (bytes). */
  readonly coapMaxMessageSize: number;
  readonly [option: string]: unknown;
}

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

/** Connector instances: one per protocol set-up an account runs, owning its endpoints. */
export class Services {
  readonly #store: ServiceStore;

  constructor(store: ServiceStore) {
    this.#store = store;
  }

  async create(scope: Scope, input: ServiceInput): Promise<Service> {
    const now = new Date().toISOString();
    const service: Service = {
      id: newId(),
      accountId: scope.accountId,
      name: input.name,
      type: input.type,
      options: { ...DEFAULT_SERVICE_OPTIONS, ...input.options },
      createdAt: now,
      updatedAt: now,
    };
    await this.#store.insert(service);
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

  /** Replaces name, type and options; options left out fall back to their defaults. */
  async replace(scope: Scope, id: string, input: ServiceInput): Promise<Service> {
    const current = await this.get(scope, id);
    const service: Service = {
      ...current,
      name: input.name,
      type: input.type,
      options: { ...DEFAULT_SERVICE_OPTIONS, ...input.options },
      updatedAt: new Date().toISOString(),
    };
    await this.#store.update(service);
    return service;
  }

  /** Deletes a service; refuses (409) while it has endpoints unless `cascade`, which deletes them too. */
  async delete(scope: Scope, id: string, options: { cascade: boolean }): Promise<void> {
    await this.get(scope, id);
    if (!options.cascade) {
      const endpoints = await this.#store.endpointCount(id);
      if (endpoints > 0) {
        throw new AppError('IOTB_SERVICE_NOT_EMPTY', 'The service still has endpoints; delete them first or pass ?cascade=true', { endpoints });
      }
    }
    await this.#store.delete(id);
  }
}
