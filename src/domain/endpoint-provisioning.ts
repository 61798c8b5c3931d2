import { AppError, errorBody, type ErrorBody } from '../errors.js';
import type { CredentialsInput, DeviceCredentials, PreparedCredentials } from './device-credentials.js';
import type { Endpoint, EndpointInput, Endpoints } from './endpoints.js';
import type { Scope } from './scope.js';

/** Most endpoints one bulk request creates. */
export const PROVISION_BATCH_MAX = 1000;

/** Endpoints of a bulk request written in one transaction. */
const CHUNK = 200;

/** An item of a bulk request ready to be written. */
interface Prepared {
  readonly index: number;
  readonly endpoint: Endpoint;
  readonly credentials: PreparedCredentials | undefined;
}

/** An endpoint to create and, optionally, the device password it logs in with. */
export interface ProvisionInput extends EndpointInput {
  readonly credentials?: CredentialsInput | undefined;
}

/** A created endpoint; `credentials` is present when some were asked for, with the generated secret if there is one. */
export type ProvisionedEndpoint = Endpoint & { readonly credentials?: { readonly password?: string } };

/** One item of a bulk creation: created, or the error that item alone met (the others are not undone). */
export type ProvisionResult =
  | { readonly index: number; readonly status: 201; readonly endpoint: ProvisionedEndpoint }
  | { readonly index: number; readonly status: number; readonly error: ErrorBody['error'] };

/**
 * Creating endpoints together with their device credentials, one at a time or many per call (the fleet
 * import). Credentials are prepared before the endpoint is written, so a refused password creates nothing.
 */
export class EndpointProvisioning {
  readonly #endpoints: Endpoints;
  readonly #credentials: DeviceCredentials;

  constructor(endpoints: Endpoints, credentials: DeviceCredentials) {
    this.#endpoints = endpoints;
    this.#credentials = credentials;
  }

  /** Creates one endpoint and its credentials. Errors as `endpoints.create` and `credentials.prepare`. */
  async create(scope: Scope, input: ProvisionInput): Promise<ProvisionedEndpoint> {
    const { credentials: wanted, ...endpointInput } = input;
    const prepared = wanted === undefined ? undefined : await this.#credentials.prepare(wanted);
    const endpoint = await this.#endpoints.create(scope, endpointInput);
    if (prepared === undefined) return endpoint;
    return { ...endpoint, credentials: await this.#credentials.store(endpoint, prepared) };
  }

  /**
   * Creates every item it can and reports each: one item's refusal (a key taken, a short password, a busy KDF
   * line, an unknown service) does not stop the others. Credentials are prepared one item after the other, so
   * a request holds at most one place in the KDF line that device log-ins share; the endpoints are then written
   * CHUNK at a time, each chunk with its password hashes in one transaction (one commit a chunk, not two an item:
   * 1,000 items took ~300 ms of the database's one connection). A chunk refused as a whole (one key taken, the
   * quota reached midway) is written again item by item, to say which.
   *
   * @example const results = await provisioning.createMany(scope, [{ key: 'meter-1', serviceId, credentials: { generate: true } }]);
   */
  async createMany(scope: Scope, items: readonly ProvisionInput[]): Promise<ProvisionResult[]> {
    if (items.length > PROVISION_BATCH_MAX) throw new AppError('IOTB_REQUEST_VALIDATION', `At most ${PROVISION_BATCH_MAX} endpoints per request`);
    const results: ProvisionResult[] = [];
    const refused = (index: number, error: unknown) => {
      if (!(error instanceof AppError)) throw error;
      results[index] = { index, status: error.status, error: errorBody(error).error };
    };
    /** Each service named, checked once (a refused one refuses each of its items). */
    const services = new Map<string, Promise<void>>();
    const ready: Prepared[] = [];
    for (const [index, item] of items.entries()) {
      const { credentials: wanted, ...input } = item;
      try {
        // In the order `create` checks: the password, the service, then the endpoint itself.
        const credentials = wanted === undefined ? undefined : await this.#credentials.prepare(wanted);
        let checked = services.get(input.serviceId);
        if (!checked) services.set(input.serviceId, (checked = this.#endpoints.checkService(scope, input.serviceId)));
        await checked;
        ready.push({ index, endpoint: this.#endpoints.build(scope, input), credentials });
      } catch (error) {
        refused(index, error);
      }
    }
    for (let start = 0; start < ready.length; start += CHUNK) {
      const chunk = ready.slice(start, start + CHUNK);
      try {
        await this.#insert(scope, chunk, results);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        for (const one of chunk) {
          try {
            await this.#insert(scope, [one], results);
          } catch (itsError) {
            refused(one.index, itsError);
          }
        }
      }
    }
    return results;
  }

  /** Stores prepared items in one transaction and records them as created. */
  async #insert(scope: Scope, prepared: readonly Prepared[], results: ProvisionResult[]): Promise<void> {
    const hashes = new Map(prepared.flatMap((one) => (one.credentials ? [[one.endpoint.id, one.credentials.hash] as const] : [])));
    await this.#endpoints.insertMany(scope, prepared.map((one) => one.endpoint), hashes);
    for (const { index, endpoint, credentials } of prepared) {
      results[index] = { index, status: 201, endpoint: credentials === undefined ? endpoint : { ...endpoint, credentials: credentials.generated === undefined ? {} : { password: credentials.generated } } };
    }
  }
}
