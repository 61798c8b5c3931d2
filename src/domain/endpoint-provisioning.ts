import { AppError, errorBody, type ErrorBody } from '../errors.js';
import type { CredentialsInput, DeviceCredentials } from './device-credentials.js';
import type { Endpoint, EndpointInput, Endpoints } from './endpoints.js';
import type { Scope } from './scope.js';

/** Most endpoints one bulk request creates. */
export const PROVISION_BATCH_MAX = 1000;

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
   * Creates each item on its own, in order, and reports each: one item's refusal (a key taken, a short
   * password, a busy KDF line) does not stop the others. Items run one after the other so that a request
   * holds at most one place in the KDF line that device log-ins share.
   *
   * @example const results = await provisioning.createMany(scope, [{ key: 'meter-1', serviceId, credentials: { generate: true } }]);
   */
  async createMany(scope: Scope, items: readonly ProvisionInput[]): Promise<ProvisionResult[]> {
    if (items.length > PROVISION_BATCH_MAX) throw new AppError('IOTB_REQUEST_VALIDATION', `At most ${PROVISION_BATCH_MAX} endpoints per request`);
    const results: ProvisionResult[] = [];
    for (const [index, item] of items.entries()) {
      try {
        results.push({ index, status: 201, endpoint: await this.create(scope, item) });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        results.push({ index, status: error.status, error: errorBody(error).error });
      }
    }
    return results;
  }
}
