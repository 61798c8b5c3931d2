import { AppError } from '../errors.js';
import { lruCache } from '../lru.js';
import type { Endpoint, Endpoints } from './endpoints.js';
import type { Scope } from './scope.js';

/** How an endpoint's device authenticates over DTLS. */
export type SecurityMode = 'psk' | 'x509';
export const SECURITY_MODES: readonly SecurityMode[] = ['psk', 'x509'];

/** PSK lengths: at least 128 bits (shorter keys fall to an offline search of one captured handshake), at most 64 bytes. */
export const PSK_MIN_BYTES = 16;
export const PSK_MAX_BYTES = 64;
/** PSK identities: at most 128 bytes of UTF-8 (RFC 4279 5.1 allows 2^16, devices store far less). */
export const PSK_IDENTITY_MAX_BYTES = 128;
/** How long `of()` trusts what it read when other processes change settings too (a cluster), and how many endpoints it remembers. */
const OF_CACHE_MS = 5000;
const OF_CACHE_SIZE = 50_000;

export interface StoredSecurity {
  readonly endpointId: string;
  readonly accountId: string;
  readonly mode: SecurityMode;
  readonly pskIdentity?: string | undefined;
  /** Hex. */
  readonly pskKey?: string | undefined;
  readonly updatedAt: string;
}

export interface DeviceSecurityStore {
  get(endpointId: string): Promise<StoredSecurity | undefined>;
  /** Those of these endpoints that have one, by endpoint id (export). */
  getMany(endpointIds: readonly string[]): Promise<Map<string, StoredSecurity>>;
  byPskIdentity(identity: string): Promise<StoredSecurity | undefined>;
  /** Stores it; false when the PSK identity belongs to another endpoint. */
  put(security: StoredSecurity): Promise<boolean>;
  remove(endpointId: string): Promise<boolean>;
}

/** What the API shows: never the key. */
export interface SecurityView {
  readonly mode: SecurityMode;
  readonly identity?: string;
  readonly keySet?: boolean;
  readonly updatedAt: string;
}

export type SecurityInput = { readonly mode: 'psk'; readonly identity: string; readonly key: string } | { readonly mode: 'x509' };

/**
 * The DTLS security of endpoints (docs/dtls.md): a PSK identity and key, or X.509 (the device presents a
 * certificate naming its endpoint). Every call is scoped to the acting account; `pskFor` serves the DTLS
 * handshake, which knows only the identity.
 */
export class DeviceSecurity {
  readonly #store: DeviceSecurityStore;
  readonly #endpoints: Endpoints;
  /**
   * `of()` answers every CoAP request and Register: a cache keeps a store read off that path (a Register of a
   * device seen minutes ago read the store every time). Changes made in this process drop their entry at once;
   * where other processes change settings too (a cluster), what was read is trusted for OF_CACHE_MS only.
   */
  readonly #recent = lruCache<string, { readonly at: number; readonly security: StoredSecurity | undefined }>(OF_CACHE_SIZE);
  readonly #trustMs: number;
  /** Counts changes made here: a read that a change overtook is not cached (it may be the value before it). */
  #changes = 0;
  readonly #changed: ((endpointId: string, previous: StoredSecurity | undefined) => void)[] = [];

  constructor(store: DeviceSecurityStore, endpoints: Endpoints, options: { readonly changedElsewhere?: boolean } = {}) {
    this.#store = store;
    this.#endpoints = endpoints;
    this.#trustMs = options.changedElsewhere ? OF_CACHE_MS : Number.POSITIVE_INFINITY;
  }

  async put(scope: Scope, ref: string, input: SecurityInput): Promise<SecurityView> {
    const endpoint = await this.#endpoints.get(scope, ref);
    const previous = await this.#store.get(endpoint.id);
    const security: StoredSecurity =
      input.mode === 'psk'
        ? { endpointId: endpoint.id, accountId: endpoint.accountId, mode: 'psk', pskIdentity: checkIdentity(input.identity), pskKey: parseKey(input.key).toString('hex'), updatedAt: new Date().toISOString() }
        : { endpointId: endpoint.id, accountId: endpoint.accountId, mode: 'x509', updatedAt: new Date().toISOString() };
    const stored = await this.#changing(endpoint.id, () => this.#store.put(security));
    if (!stored) throw new AppError('IOTB_PSK_IDENTITY_IN_USE');
    for (const listener of this.#changed) listener(endpoint.id, previous);
    return view(security);
  }

  async get(scope: Scope, ref: string): Promise<SecurityView> {
    const endpoint = await this.#endpoints.get(scope, ref);
    const stored = await this.#store.get(endpoint.id);
    if (!stored) throw new AppError('IOTB_SECURITY_NOT_FOUND');
    return view(stored);
  }

  async remove(scope: Scope, ref: string): Promise<void> {
    const endpoint = await this.#endpoints.get(scope, ref);
    const previous = await this.#store.get(endpoint.id);
    if (!(await this.#changing(endpoint.id, () => this.#store.remove(endpoint.id)))) throw new AppError('IOTB_SECURITY_NOT_FOUND');
    for (const listener of this.#changed) listener(endpoint.id, previous);
  }

  /** The stored security of endpoints the caller has read in its scope, key included (a sealed export). */
  async storedOf(endpoints: readonly Pick<Endpoint, 'id'>[]): Promise<Map<string, StoredSecurity>> {
    return this.#store.getMany(endpoints.map((endpoint) => endpoint.id));
  }

  /** The security an endpoint's device must use (for the protocol servers; no scope). */
  async of(endpoint: Pick<Endpoint, 'id'>): Promise<StoredSecurity | undefined> {
    const now = Date.now();
    const cached = this.#recent.get(endpoint.id);
    if (cached && now - cached.at < this.#trustMs) return cached.security;
    const changes = this.#changes;
    const security = await this.#store.get(endpoint.id);
    // A change began meanwhile: this read may be from before it, and would then be trusted until the next change.
    if (changes === this.#changes) this.#recent.set(endpoint.id, { at: now, security });
    return security;
  }

  /** The key and endpoint of a PSK identity, for the DTLS handshake. */
  async pskFor(identity: string): Promise<{ key: Buffer; endpointId: string; accountId: string } | undefined> {
    const stored = await this.#store.byPskIdentity(identity);
    if (!stored?.pskKey) return undefined;
    return { key: Buffer.from(stored.pskKey, 'hex'), endpointId: stored.endpointId, accountId: stored.accountId };
  }

  /**
   * Runs a write of the endpoint's settings. Counted as it starts and as it ends, so that no `of()` read that
   * overlapped it is cached (on PostgreSQL a read may run on another connection and answer after the write ends).
   */
  async #changing<T>(endpointId: string, write: () => Promise<T>): Promise<T> {
    this.#changes++;
    try {
      return await write();
    } finally {
      this.#changes++;
      this.#recent.delete(endpointId);
    }
  }

  /** Called when an endpoint's security changes or goes (the DTLS server forgets its sessions). */
  onChange(listener: (endpointId: string, previous: StoredSecurity | undefined) => void): void {
    this.#changed.push(listener);
  }
}

function view(stored: StoredSecurity): SecurityView {
  return { mode: stored.mode, ...(stored.pskIdentity !== undefined && { identity: stored.pskIdentity, keySet: true }), updatedAt: stored.updatedAt };
}

function checkIdentity(identity: string): string {
  const bytes = Buffer.byteLength(identity, 'utf8');
  if (bytes === 0 || bytes > PSK_IDENTITY_MAX_BYTES) throw invalid('identity', `identity is 1 to ${PSK_IDENTITY_MAX_BYTES} bytes of UTF-8`);
  return identity;
}

/** A key given as hex (an even number of hex digits) or base64. */
export function parseKey(text: string): Buffer {
  let key: Buffer | undefined;
  if (/^(?:[0-9a-fA-F]{2})+$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/]+={0,2}$/.test(text) && text.length % 4 === 0) key = Buffer.from(text, 'base64');
  if (!key) throw invalid('key', 'key is hex or base64');
  if (key.length < PSK_MIN_BYTES || key.length > PSK_MAX_BYTES) throw invalid('key', `key is ${PSK_MIN_BYTES} to ${PSK_MAX_BYTES} bytes`);
  return key;
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
