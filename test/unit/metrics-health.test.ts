// Health's merge of triggers, services and endpoints (src/domain/health.ts) over an in-memory store: the error
// sorts pick the right endpoints from those with errors and the most recently active ones, services add up
// their endpoints' errors, and every sort gives the same first `limit` as sorting everything would. The
// service's real store records no endpoint errors yet (they come from the log store), so this is where the
// paths with endpoint errors are exercised.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Health, STATUS_SORTS, type EndpointHealthRow, type EndpointOrder, type HealthStore, type StatusQuery, type StatusSort } from '../../src/domain/health.js';

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** Endpoints, their errors, two services and three triggers, held in arrays; lists sorted as the SQL store does. */
class MemoryStore implements HealthStore {
  readonly calls: string[] = [];
  constructor(
    readonly endpoints: EndpointHealthRow[],
    readonly errors: Map<string, number>,
  ) {}

  async triggerHealth() {
    return [
      { id: 't1', name: 'decode', enabled: true, library: false, lastRunAt: 5_000, runs: 10, failed: 3 },
      { id: 't2', name: 'idle', enabled: false, library: false, lastRunAt: null, runs: 0, failed: 0 },
      { id: 't3', name: 'lib', enabled: true, library: true, lastRunAt: null, runs: 0, failed: 0 },
    ];
  }

  async serviceHealth() {
    return ['s1', 's2'].map((id) => {
      const mine = this.endpoints.filter((endpoint) => endpoint.serviceId === id);
      const seen = mine.map((endpoint) => endpoint.lastSeenAt).filter((time) => time !== null);
      const connected = mine.filter((endpoint) => endpoint.state === 'connected').length;
      return { id, name: `service-${id}`, type: 'lwm2m', lastSeenAt: seen.length === 0 ? null : Math.max(...seen), connected, unavailable: mine.length - connected };
    });
  }

  async endpointHealth(_accountId: string, order: EndpointOrder, limit: number) {
    this.calls.push(`list ${order} ${limit}`);
    const text = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const seen = this.endpoints.filter((endpoint) => endpoint.lastSeenAt !== null);
    const never = this.endpoints.filter((endpoint) => endpoint.lastSeenAt === null).sort((a, b) => text(a.id, b.id));
    if (order === 'name') return [...this.endpoints].sort((a, b) => text(a.key, b.key) || text(a.id, b.id)).slice(0, limit);
    const direction = order === 'lastActivity' ? 1 : -1;
    seen.sort((a, b) => direction * (a.lastSeenAt! - b.lastSeenAt! || text(a.id, b.id)));
    return [...seen, ...never].slice(0, limit);
  }

  async endpointHealthOf(_accountId: string, ids: readonly string[]) {
    return this.endpoints.filter((endpoint) => ids.includes(endpoint.id));
  }

  async endpointErrorCounts(_accountId: string, _since: number, limit: number, endpointIds?: readonly string[]) {
    this.calls.push(`errors ${limit}${endpointIds ? ` of ${endpointIds.length}` : ''}`);
    return [...this.errors]
      .filter(([id]) => endpointIds === undefined || endpointIds.includes(id))
      .map(([endpointId, count]) => ({ endpointId, count }))
      .sort((a, b) => b.count - a.count || (a.endpointId < b.endpointId ? -1 : 1))
      .slice(0, limit);
  }
}

const objects = { trigger: async () => undefined, endpoint: async () => undefined, service: async () => undefined };

function fleet(count: number, erring: number, seed: number): MemoryStore {
  const next = random(seed);
  const endpoints: EndpointHealthRow[] = Array.from({ length: count }, (_, i) => ({
    id: `e${String(i).padStart(5, '0')}`,
    key: `key-${Math.floor(next() * 1e6)}`,
    serviceId: i % 3 === 0 ? 's2' : 's1',
    state: next() < 0.7 ? 'connected' : 'unavailable',
    // Some share a time, some were never seen.
    lastSeenAt: next() < 0.15 ? null : 1000 + Math.floor(next() * 200),
  }));
  const errors = new Map<string, number>();
  for (let i = 0; i < erring; i++) errors.set(endpoints[Math.floor(next() * count)]!.id, 1 + Math.floor(next() * 5));
  return new MemoryStore(endpoints, errors);
}

const query = (sort: StatusSort, limit: number): StatusQuery => ({ objects: new Set(['trigger', 'endpoint', 'service']), sort, limit, since: 0, resolve: false });

describe('metrics health merge', () => {
  it('gives, for every sort and limit, the first items of the whole set in that order', async () => {
    for (const [count, erring, seed] of [
      [300, 0, 1],
      [300, 20, 2],
      [300, 250, 3],
      [50, 40, 4],
    ] as const) {
      const store = fleet(count, erring, seed);
      const health = new Health(store, objects);
      for (const sort of STATUS_SORTS) {
        const all = await health.status('a', query(sort, 1000));
        assert.equal(all.length, count + 5, `${sort}: every object once`);
        for (const limit of [1, 7, 30, 100]) {
          const first = await health.status('a', query(sort, limit));
          assert.deepEqual(
            first.map((item) => item.id),
            all.slice(0, limit).map((item) => item.id),
            `${sort}, limit ${limit}, ${erring} erring of ${count}`,
          );
        }
      }
    }
  });

  it('puts the endpoints with the most errors first, sums them per service, and gives the others 0', async () => {
    const store = fleet(200, 0, 5);
    const [a, b, c] = store.endpoints.filter((endpoint) => endpoint.serviceId === 's2');
    store.errors.set(a!.id, 9).set(b!.id, 4).set(c!.id, 4);
    const items = await new Health(store, objects).status('a', query('-errors', 5));
    assert.deepEqual(
      items.map((item) => [item.object, item.errors]),
      [
        ['service', 17],
        ['endpoint', 9],
        ['endpoint', 4],
        ['endpoint', 4],
        ['trigger', 3],
      ],
    );
    assert.equal(items[0]!.id, 's2');
    const quiet = await new Health(store, objects).status('a', { ...query('-lastActivity', 1000), objects: new Set(['endpoint']) });
    assert.equal(quiet.filter((item) => item.errors > 0).length, 3);
    assert.equal(quiet.reduce((sum, item) => sum + item.errors, 0), 17);
  });

  it('reads no more endpoints than the sort needs', async () => {
    const store = fleet(5000, 0, 6);
    await new Health(store, objects).status('a', query('-lastActivity', 100));
    assert.deepEqual(store.calls, ['errors 1000', 'list -lastActivity 100']);
    store.calls.length = 0;
    await new Health(store, objects).status('a', { ...query('-errors', 100), objects: new Set(['trigger']) });
    assert.deepEqual(store.calls, [], 'triggers alone read no endpoints');
  });
});
