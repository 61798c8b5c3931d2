import type { EndpointStore } from '../domain/endpoints.js';
import { AppError } from '../errors.js';
import type { AccountLimits } from './account-limits.js';

/**
 * The endpoint store with each account's `maxEndpoints` checked before an insert, wherever the endpoint is created
 * from (API, bulk, scripts, devices provisioning themselves, imports): 409 `IOTB_ACCOUNT_ENDPOINT_LIMIT` once the
 * account has as many as its limit. Only accounts with a limit pay for it: their inserts wait for each other and
 * count the account's endpoints exactly (one indexed count), so parallel creates cannot pass the limit on this node.
 */
export function limitAccountEndpoints(store: EndpointStore, limits: AccountLimits): EndpointStore {
  const turns = new Map<string, Promise<unknown>>();

  const admit = (accountId: string, adding: number, write: () => Promise<void>): Promise<void> => {
    const max = limits.get(accountId).maxEndpoints;
    if (max === null) return write();
    const turn = (turns.get(accountId) ?? Promise.resolve()).then(async () => {
      const existing = await store.count(accountId, {});
      if (existing + adding > max) {
        throw new AppError('IOTB_ACCOUNT_ENDPOINT_LIMIT', `The account may have ${max} endpoints; it has ${existing}`, { maxEndpoints: max, endpoints: existing });
      }
      await write();
    });
    const settled = turn.catch(() => undefined);
    turns.set(accountId, settled);
    void settled.then(() => {
      if (turns.get(accountId) === settled) turns.delete(accountId);
    });
    return turn;
  };

  const insert: EndpointStore['insert'] = (endpoint) => admit(endpoint.accountId, 1, () => store.insert(endpoint));
  // A bulk batch is one account's (an import into an account): all of it, or none.
  const insertMany: EndpointStore['insertMany'] = (endpoints, passwordHashes) => {
    const accountId = endpoints[0]?.accountId;
    return accountId === undefined ? store.insertMany(endpoints, passwordHashes) : admit(accountId, endpoints.length, () => store.insertMany(endpoints, passwordHashes));
  };

  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property) {
      if (property === 'insert') return insert;
      if (property === 'insertMany') return insertMany;
      if (bound.has(property)) return bound.get(property);
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      bound.set(property, method);
      return method;
    },
  });
}
