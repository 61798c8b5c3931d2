import type { Endpoint } from '../../domain/endpoints.js';
import type { Service } from '../../domain/services.js';
import { AppError } from '../../errors.js';
import { normalizeBootstrapConfig, type BootstrapConfig } from './config.js';

/** An endpoint's own bootstrap configuration as stored. */
export interface StoredBootstrapConfig {
  readonly endpointId: string;
  readonly config: BootstrapConfig;
  readonly updatedAt: string;
}

/** Where per-endpoint bootstrap configurations are kept (the service's default is its option `bootstrap`). */
export interface BootstrapConfigStore {
  get(endpointId: string): Promise<StoredBootstrapConfig | undefined>;
  /** Those of these endpoints that have their own, by endpoint id (export). */
  getMany(endpointIds: readonly string[]): Promise<Map<string, StoredBootstrapConfig>>;
  put(accountId: string, endpointId: string, config: BootstrapConfig, now: string): Promise<StoredBootstrapConfig>;
  remove(endpointId: string): Promise<boolean>;
}

/** The configuration a device is bootstrapped with, and where it came from. */
export interface EffectiveBootstrapConfig {
  readonly config: BootstrapConfig;
  readonly source: 'endpoint' | 'service';
  readonly updatedAt?: string | undefined;
}

/**
 * Bootstrap configurations: an endpoint's own, else its service's option `bootstrap` (a default for every
 * device of the service). Callers have checked the endpoint belongs to the acting account.
 */
export class BootstrapConfigs {
  readonly #store: BootstrapConfigStore;

  constructor(store: BootstrapConfigStore) {
    this.#store = store;
  }

  /** Checks and stores the endpoint's own configuration; `IOTB_REQUEST_VALIDATION` names a bad field. */
  put(endpoint: Endpoint, body: unknown): Promise<StoredBootstrapConfig> {
    return this.#store.put(endpoint.accountId, endpoint.id, normalizeBootstrapConfig(body), new Date().toISOString());
  }

  own(endpoint: Endpoint): Promise<StoredBootstrapConfig | undefined> {
    return this.#store.get(endpoint.id);
  }

  /** The own configurations of endpoints the caller has read in its scope, by endpoint id (export). */
  async ownMany(endpoints: readonly Endpoint[]): Promise<Map<string, BootstrapConfig>> {
    const stored = await this.#store.getMany(endpoints.map((endpoint) => endpoint.id));
    return new Map([...stored].map(([id, entry]) => [id, entry.config]));
  }

  remove(endpoint: Endpoint): Promise<boolean> {
    return this.#store.remove(endpoint.id);
  }

  /**
   * What the device gets: its own configuration, else the service's default; undefined when neither exists.
   * A service default that no longer passes the checks throws `IOTB_REQUEST_VALIDATION` (the bootstrap fails
   * with that reason rather than writing half of it).
   */
  async effective(endpoint: Endpoint, service: Pick<Service, 'options'>): Promise<EffectiveBootstrapConfig | undefined> {
    const own = await this.#store.get(endpoint.id);
    if (own) return { config: own.config, source: 'endpoint', updatedAt: own.updatedAt };
    const fallback = service.options.bootstrap;
    if (fallback === undefined || fallback === null) return undefined;
    return { config: normalizeBootstrapConfig(fallback), source: 'service' };
  }
}

/** Checks a service's option `bootstrap` when the service is written: a bad default is refused then, not at a device's bootstrap. */
export function checkServiceBootstrapOption(options: Record<string, unknown> | undefined): void {
  const value = options?.bootstrap;
  if (value === undefined || value === null) return;
  try {
    normalizeBootstrapConfig(value);
  } catch (error) {
    if (error instanceof AppError) throw new AppError(error.code, `options.bootstrap: ${error.message}`, error.details);
    throw error;
  }
}

/** A configuration as the API shows it: PSK and private keys are write-only (`pskKeySet`, `privateKeySet` say one is stored). */
export function redactBootstrapConfig(config: BootstrapConfig): Record<string, unknown> {
  return {
    ...config,
    servers: config.servers.map(({ pskKey, privateKey, ...server }) => ({ ...server, ...(pskKey !== undefined && { pskKeySet: true }), ...(privateKey !== undefined && { privateKeySet: true }) })),
  };
}
