import { createHash, timingSafeEqual } from 'node:crypto';
import { lruCache } from '../lru.js';
import { AppError } from '../errors.js';
import { checkDeviceSecret, checkImportedHash, hashDevicePassword, hashGeneratedSecret, kdfLine, newDeviceSecret } from './device-secrets.js';
import type { WorkGate } from './work-gate.js';
import type { Endpoint, Endpoints, EndpointStore } from './endpoints.js';
import type { Scope } from './scope.js';
import { PASSWORD_MIN_LENGTH } from './users.js';

/** Longest device password, in characters (Unicode code points). The shortest is `PASSWORD_MIN_LENGTH`. */
export const DEVICE_PASSWORD_MAX_LENGTH = 256;

/** How many endpoints' last successful device log-in this process remembers. */
const VERIFIED_CACHE_SIZE = 50_000;

/** Whether a device password is set (`GET /endpoints/{ref}/credentials`); the password and its hash never leave the domain. */
export interface EndpointCredentials {
  readonly passwordSet: boolean;
  /** `generated` (a secret the service made) or `chosen` (a password someone set); absent when none is set. */
  readonly kind?: 'generated' | 'chosen';
  /** When the password was last set; absent when none is set. */
  readonly updatedAt?: string;
}

/** Credentials ready to store: the hash, and the generated secret when there is one. */
export interface PreparedCredentials {
  readonly hash: string;
  readonly generated: string | undefined;
}

/** What sets a device's credentials: a password someone chose, or a secret the service generates. */
export type CredentialsInput = { readonly password: string } | { readonly generate: true };

/**
 * The passwords devices log in with (MQTT: username = endpoint key), by endpoint. How they are stored and why
 * is in device-secrets.ts: generated secrets cost a microsecond to check, chosen passwords a PBKDF2.
 */
export class DeviceCredentials {
  readonly #store: EndpointStore;
  readonly #endpoints: Endpoints;
  /**
   * Successful device log-ins by endpoint id: sha256(stored hash + NUL + password). A reconnecting device
   * is checked against this instead of the KDF. The stored hash is read on every log-in and is part of the
   * digest, so a password changed or removed by another process is never answered from here.
   */
  readonly #verified = lruCache<string, Buffer>(VERIFIED_CACHE_SIZE);
  readonly #minPasswordLength: number;
  /** Where chosen passwords wait for their KDF; generated secrets never do. */
  readonly #kdf: WorkGate;

  /**
   * `minPasswordLength`: shortest chosen password (service option; `PASSWORD_MIN_LENGTH` at least);
   * `maxWaitMs`: how long a chosen password's check may expect to wait before `IOTB_AUTH_BUSY` (10 s).
   */
  constructor(store: EndpointStore, endpoints: Endpoints, options: { minPasswordLength?: number; maxWaitMs?: number } = {}) {
    this.#store = store;
    this.#endpoints = endpoints;
    this.#minPasswordLength = Math.max(PASSWORD_MIN_LENGTH, options.minPasswordLength ?? PASSWORD_MIN_LENGTH);
    this.#kdf = kdfLine(options.maxWaitMs);
  }

  /**
   * Sets or replaces the endpoint's device password → the generated secret when `{generate: true}` (shown
   * this once; only its hash is kept), else undefined. `IOTB_REQUEST_VALIDATION` unless a chosen password has
   * the service's minimum (8 unless raised) to `DEVICE_PASSWORD_MAX_LENGTH` characters; 404 like `endpoints.get`.
   *
   * @example const { password } = await credentials.set(scope, 'k.sensor-17', { generate: true });
   */
  async set(scope: Scope, ref: string, input: CredentialsInput, serviceId?: string): Promise<{ password?: string }> {
    const endpoint = await this.#endpoints.get(scope, ref, serviceId);
    return this.setFor(endpoint, input);
  }

  /** `set` for an endpoint the caller has just read or created in its scope. */
  async setFor(endpoint: Endpoint, input: CredentialsInput): Promise<{ password?: string }> {
    return this.store(endpoint, await this.prepare(input));
  }

  /**
   * The stored form of `input`, made before anything is written (the check of a chosen password, its KDF, a
   * generated secret): creating an endpoint with credentials prepares them first, so a refusal creates nothing.
   */
  async prepare(input: CredentialsInput): Promise<PreparedCredentials> {
    if ('generate' in input) {
      const password = newDeviceSecret();
      return { hash: hashGeneratedSecret(password), generated: password };
    }
    return { hash: await hashDevicePassword(checkedDevicePassword(input.password, this.#minPasswordLength), this.#kdf), generated: undefined };
  }

  /** Stores prepared credentials as the endpoint's → the generated secret, if it is one (to be shown once). */
  async store(endpoint: Endpoint, prepared: PreparedCredentials): Promise<{ password?: string }> {
    await this.#store.setPasswordHash(endpoint.id, prepared.hash, new Date().toISOString());
    this.#verified.delete(endpoint.id);
    return prepared.generated === undefined ? {} : { password: prepared.generated };
  }

  /** The stored hashes of endpoints the caller has read in its scope (a sealed export; never shown by the API). */
  async hashesOf(endpoints: readonly Pick<Endpoint, 'id'>[]): Promise<Map<string, string>> {
    return this.#store.passwordHashes(endpoints.map((endpoint) => endpoint.id));
  }

  /**
   * Stores a hash exported from another account or installation as the endpoint's. Only the current forms are
   * taken, PBKDF2 with a bounded number of rounds: a document must not make every log-in of a device cost more
   * than the service's own hashes (the KDF line is shared by all accounts). `IOTB_REQUEST_VALIDATION` otherwise.
   */
  async storeHash(endpoint: Endpoint, hash: string): Promise<void> {
    checkImportedHash(hash);
    await this.store(endpoint, { hash, generated: undefined });
  }

  /** Removes the endpoint's device password, after which it cannot log in with one; idempotent (no error when none is set). */
  async delete(scope: Scope, ref: string, serviceId?: string): Promise<void> {
    const endpoint = await this.#endpoints.get(scope, ref, serviceId);
    await this.#store.deletePasswordHash(endpoint.id);
    this.#verified.delete(endpoint.id);
  }

  /** Whether the endpoint has a device password, of which kind and when it was set; never the password or its hash. */
  async get(scope: Scope, ref: string, serviceId?: string): Promise<EndpointCredentials> {
    const endpoint = await this.#endpoints.get(scope, ref, serviceId);
    const stored = await this.#store.passwordHash(endpoint.id);
    if (!stored) return { passwordSet: false };
    return { passwordSet: true, kind: stored.hash.startsWith('sha256$') ? 'generated' : 'chosen', updatedAt: stored.updatedAt };
  }

  /**
   * For device servers that have already found the endpoint by its key (no scope): true when `password` is the
   * endpoint's device password, false when it is not or none is set. A hash in an older form is replaced by the
   * current one once the password is known to be right. Throws `IOTB_AUTH_BUSY` when too many chosen
   * passwords wait for their check.
   */
  async verify(endpoint: Endpoint, password: string): Promise<boolean> {
    const stored = await this.#store.passwordHash(endpoint.id);
    if (!stored) {
      this.#verified.delete(endpoint.id);
      return false;
    }
    const digest = createHash('sha256').update(stored.hash).update('\0').update(password).digest();
    const remembered = this.#verified.get(endpoint.id);
    if (remembered && timingSafeEqual(remembered, digest)) return true;
    const { ok, outdated } = await checkDeviceSecret(password, stored.hash, this.#kdf);
    if (!ok) return false;
    if (outdated) {
      const renewed = await hashDevicePassword(password, this.#kdf);
      await this.#store.setPasswordHash(endpoint.id, renewed, stored.updatedAt);
      this.#verified.set(endpoint.id, createHash('sha256').update(renewed).update('\0').update(password).digest());
    } else {
      this.#verified.set(endpoint.id, digest);
    }
    return true;
  }
}

function checkedDevicePassword(password: string, minLength: number): string {
  // Counted in code points, as the request schema (Ajv) counts them.
  const length = [...password].length;
  if (length < minLength || length > DEVICE_PASSWORD_MAX_LENGTH) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `A device password has ${minLength} to ${DEVICE_PASSWORD_MAX_LENGTH} characters`);
  }
  return password;
}
