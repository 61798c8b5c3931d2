import type { Endpoint, EndpointStore } from '../domain/endpoints.js';
import { AppError } from '../errors.js';
import type { Licence } from './licence.js';

/** How long a count of the installation's endpoints is trusted while far from the limit. */
const COUNT_TTL_MS = 10_000;

/**
 * The endpoint store with the licence's `maxEndpoints` checked before each insert, wherever an endpoint is
 * created from (API, bulk, scripts, devices provisioning themselves): 409 `IOTB_LICENCE_LIMIT` once the
 * installation has as many as the licence allows. Far from the limit a recent count plus the inserts since is
 * used, so bulk creation does not count the table per endpoint; near it, the table is counted and inserts
 * wait for each other (several nodes at once may still pass it by a few).
 */
export function limitEndpoints(store: EndpointStore, licence: Licence): EndpointStore {
  let known: { count: number; atMs: number } | undefined;
  let near: Promise<unknown> = Promise.resolve();

  const count = async (): Promise<number> => {
    const counted = await store.countTree('/');
    known = { count: counted, atMs: Date.now() };
    return counted;
  };

  /** Runs `write`, which adds `adding` endpoints, unless the installation would have more than the licence allows. */
  const admit = async (adding: number, write: () => Promise<void>): Promise<void> => {
    const max = licence.limits()?.maxEndpoints;
    if (max === undefined) return write();
    const margin = Math.max(10, Math.ceil(max / 100));
    if (known && Date.now() - known.atMs < COUNT_TTL_MS && known.count + adding + margin < max) {
      await write();
      known.count += adding;
      return;
    }
    // Near the limit: one write at a time, each after an exact count.
    const turn = near.then(async () => {
      const existing = await count();
      if (existing + adding > max) {
        throw new AppError('IOTB_LICENCE_LIMIT', `The licence allows ${max} endpoints; the installation has ${existing}`, { maxEndpoints: max, endpoints: existing });
      }
      await write();
      if (known) known.count += adding;
    });
    near = turn.catch(() => undefined);
    return turn;
  };

  const insert: EndpointStore['insert'] = (endpoint) => admit(1, () => store.insert(endpoint));
  // The bulk insert of an import, where the store has one: all of the batch or none.
  const bulk = (store as unknown as { insertMany?: EndpointStore['insertMany'] }).insertMany?.bind(store);
  const insertMany = bulk && ((endpoints: readonly Endpoint[], passwordHashes?: ReadonlyMap<string, string>) => admit(endpoints.length, () => bulk(endpoints, passwordHashes)));

  // Deletes are not watched: they only make a cached count too high, which sends the next insert to an exact count.
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, property) {
      if (property === 'insert') return insert;
      if (property === 'insertMany' && insertMany) return insertMany;
      if (bound.has(property)) return bound.get(property);
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      bound.set(property, method);
      return method;
    },
  });
}
