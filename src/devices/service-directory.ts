import type { Logger } from 'pino';
import type { Service, Services, ServiceType } from '../domain/services.js';

/** A service with its protocol options read and checked once. */
export interface Configured<T> {
  readonly service: Service;
  readonly options: T;
}

/**
 * Every service of one protocol across accounts, with its options parsed: what a shared device port
 * routes to. Kept in memory; dropped when a service changes in this process and at most `maxAgeMs` old
 * otherwise (changes made by another process of a cluster).
 */
export class ServiceDirectory<T> {
  readonly #services: Services;
  readonly #type: ServiceType;
  readonly #parse: (service: Service) => T;
  readonly #logger: Logger;
  readonly #maxAgeMs: number;
  #loaded: { at: number; entries: Promise<Map<string, Configured<T>>> } | undefined;

  constructor(services: Services, type: ServiceType, parse: (service: Service) => T, logger: Logger, maxAgeMs = 10_000) {
    this.#services = services;
    this.#type = type;
    this.#parse = parse;
    this.#logger = logger;
    this.#maxAgeMs = maxAgeMs;
    // Any change drops the cache: a replaced service may have left or joined this protocol.
    services.onChange(() => (this.#loaded = undefined));
  }

  async all(): Promise<Configured<T>[]> {
    return [...(await this.#entries()).values()];
  }

  async get(serviceId: string): Promise<Configured<T> | undefined> {
    return (await this.#entries()).get(serviceId);
  }

  #entries(): Promise<Map<string, Configured<T>>> {
    if (this.#loaded && Date.now() - this.#loaded.at < this.#maxAgeMs) return this.#loaded.entries;
    const entries = this.#load();
    const loaded = { at: Date.now(), entries };
    this.#loaded = loaded;
    entries.catch(() => {
      if (this.#loaded === loaded) this.#loaded = undefined;
    });
    return entries;
  }

  async #load(): Promise<Map<string, Configured<T>>> {
    const entries = new Map<string, Configured<T>>();
    for (const service of await this.#services.allOfType(this.#type)) {
      try {
        entries.set(service.id, { service, options: this.#parse(service) });
      } catch (error) {
        // Stored before its options were checked: the service gets no traffic until they are fixed.
        this.#logger.warn({ serviceId: service.id, accountId: service.accountId, err: error }, `${this.#type} service has unusable options; it is skipped`);
      }
    }
    return entries;
  }
}
