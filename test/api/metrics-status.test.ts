// GET /metrics/status (health per trigger, endpoint and service: state, last activity, errors in a window;
// resolve=true, sort, limit, object) and GET /metrics/fields (the cached census of user-defined keys and its
// refresh): a failing trigger, simulated LwM2M devices that register and deregister, per account, bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface Item {
  object: string;
  id: string;
  name: string;
  state: string;
  lastActivity: string | null;
  errors: number;
  runs?: number;
  serviceId?: string;
  type?: string;
  endpoints?: { connected: number; unavailable: number };
  trigger?: unknown;
  endpoint?: unknown;
  service?: unknown;
}
type Field = { object: string; field: string; count: number };

for (const dialect of DIALECTS) {
  describe(`metrics status and fields (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let fleetId: string;
    let idleId: string;
    let otherServiceId: string;
    const triggers: Record<string, string> = {};
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const status = async (query = '', token = tenant.token): Promise<Item[]> => {
      const answer = await service.request('GET', `/metrics/status${query === '' ? '' : `?${query}`}`, { token });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(Object.keys(answer.body), ['items']);
      return answer.body.items as Item[];
    };
    const fields = async (query = '', token = tenant.token): Promise<{ items: Field[]; computedAt: string; truncated: boolean }> => {
      const answer = await service.request('GET', `/metrics/fields${query === '' ? '' : `?${query}`}`, { token });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    };
    const named = (items: Item[], name: string): Item => {
      const found = items.find((item) => item.name === name);
      assert.ok(found, `${name} in ${JSON.stringify(items.map((item) => item.name))}`);
      return found;
    };
    const createTrigger = async (token: string, body: Record<string, unknown>): Promise<string> => {
      const created = await service.request('POST', '/triggers', { token, body: { events: ['tick'], script: `log('ok');`, ...body } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };

    before(async () => {
      // Every call refreshes the census behind its answer: the refresh is seen without waiting a minute.
      service = await startService(dialect.name, { metricsFieldsMaxAgeSeconds: 0 });
      tenant = await createAccount(service, 'health');
      other = await createAccount(service, 'health-other');
      fleetId = await createService(service, tenant.token, { name: 'fleet', type: 'lwm2m' });
      idleId = await createService(service, tenant.token, { name: 'idle', type: 'mqtt' });
      otherServiceId = await createService(service, other.token, { name: 'other-fleet', type: 'lwm2m' });
      await createEndpoint(service, tenant.token, { key: 'st-a', serviceId: fleetId, tags: ['site:berlin', 'site:paris', 'battery'], statusDetails: { fw: '1.0', level: 3 }, parameters: { interval: 60 } });
      await createEndpoint(service, tenant.token, { key: 'st-b', serviceId: fleetId, tags: ['site:paris'], statusDetails: { fw: '2.0' } });
      await createEndpoint(service, tenant.token, { key: 'st-c', serviceId: fleetId });
      await createEndpoint(service, other.token, { key: 'o-a', serviceId: otherServiceId, statusDetails: { secret: 'x' } });
      const stored = await service.request('PUT', '/endpoints/k.st-a/storage/calibration', { token: tenant.token, body: { offset: 2 } });
      assert.equal(stored.status, 200, JSON.stringify(stored.body));

      // st-a stays connected; st-b registers after it, then leaves (unavailable, last seen kept); st-c is never heard from.
      for (const key of ['st-a', 'st-b', 'o-a']) {
        const device = await devices.start(key);
        assert.equal(await device.register(), '2.01', key);
        if (key === 'st-b') assert.equal(await device.deregister(), '2.02');
      }

      triggers.bad = await createTrigger(tenant.token, { name: 'bad', script: `trigger.exit('broken');` });
      triggers.good = await createTrigger(tenant.token, { name: 'good', globals: { threshold: { value: 5, protected: false } } });
      triggers.off = await createTrigger(tenant.token, { name: 'off', enabled: false });
      triggers.lib = await createTrigger(tenant.token, { name: 'lib', library: true, events: [], script: 'export const x = 1;' });
      triggers.otherBad = await createTrigger(other.token, { name: 'other-bad', script: `trigger.exit('other');` });
      for (let n = 0; n < 2; n++) await service.request('POST', '/events', { token: tenant.token, body: { type: 'tick' } });
      await service.request('POST', '/events', { token: other.token, body: { type: 'tick' } });
      await waitFor(async () => {
        const items = await status('object=trigger');
        return named(items, 'bad').runs === 2 && named(items, 'good').runs === 2 ? true : undefined;
      }, 'four runs recorded');
      await waitFor(async () => ((await status('object=trigger', other.token))[0]?.runs === 1 ? true : undefined), "the other account's run");
      // Presence of the simulated devices is written behind their answers.
      await waitFor(async () => {
        const fleet = named(await status('object=service'), 'fleet');
        return fleet.endpoints?.connected === 1 && fleet.lastActivity !== null ? true : undefined;
      }, 'st-a connected');
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('gives each trigger, service and endpoint its state, last activity and errors, the most errors first', async () => {
      const items = await status();
      assert.equal(items.length, 9, JSON.stringify(items.map((item) => item.name)));
      assert.deepEqual(items[0], { object: 'trigger', id: triggers.bad, name: 'bad', state: 'enabled', lastActivity: items[0]!.lastActivity, errors: 2, runs: 2 });
      assert.ok(items[0].lastActivity !== null && Date.parse(items[0].lastActivity) <= Date.now());
      const good = named(items, 'good');
      assert.deepEqual([good.state, good.errors, good.runs], ['enabled', 0, 2]);
      assert.deepEqual(named(items, 'off'), { object: 'trigger', id: triggers.off, name: 'off', state: 'disabled', lastActivity: null, errors: 0, runs: 0 });
      assert.equal(named(items, 'lib').state, 'library');

      const endpoints = Object.fromEntries(await Promise.all(['st-a', 'st-b', 'st-c'].map(async (key) => [key, (await service.request('GET', `/endpoints/k.${key}`, { token: tenant.token })).body])));
      assert.deepEqual(named(items, 'st-a'), { object: 'endpoint', id: endpoints['st-a'].id, name: 'st-a', state: 'connected', lastActivity: endpoints['st-a'].lastSeenAt, errors: 0, serviceId: fleetId });
      assert.deepEqual(named(items, 'st-b'), { object: 'endpoint', id: endpoints['st-b'].id, name: 'st-b', state: 'unavailable', lastActivity: endpoints['st-b'].lastSeenAt, errors: 0, serviceId: fleetId });
      assert.ok(endpoints['st-b'].lastSeenAt !== null, 'st-b was heard from before it left');
      assert.deepEqual(named(items, 'st-c'), { object: 'endpoint', id: endpoints['st-c'].id, name: 'st-c', state: 'unavailable', lastActivity: null, errors: 0, serviceId: fleetId });

      const latest = [endpoints['st-a'].lastSeenAt, endpoints['st-b'].lastSeenAt].sort().at(-1);
      assert.deepEqual(named(items, 'fleet'), { object: 'service', id: fleetId, name: 'fleet', state: 'degraded', lastActivity: latest, errors: 0, type: 'lwm2m', endpoints: { connected: 1, unavailable: 2 } });
      assert.deepEqual(named(items, 'idle'), { object: 'service', id: idleId, name: 'idle', state: 'idle', lastActivity: null, errors: 0, type: 'mqtt', endpoints: { connected: 0, unavailable: 0 } });

      // The window: runs before `since` are not counted, the last run still shows.
      const later = await status(`object=trigger&since=${new Date(Date.now() + 60_000).toISOString()}`);
      assert.deepEqual([named(later, 'bad').errors, named(later, 'bad').runs], [0, 0]);
      assert.equal(named(later, 'bad').lastActivity, items[0].lastActivity);
    });

    it('embeds each object as its own GET answers it with resolve=true, and only then', async () => {
      const items = await status('resolve=true');
      assert.equal(items.length, 9);
      const paths: Record<string, string> = { trigger: '/triggers/', endpoint: '/endpoints/', service: '/services/' };
      for (const item of items) {
        const own = await service.request('GET', `${paths[item.object]}${item.id}`, { token: tenant.token });
        assert.equal(own.status, 200);
        assert.deepEqual(item[item.object as 'trigger' | 'endpoint' | 'service'], own.body, item.name);
        const others = ['trigger', 'endpoint', 'service'].filter((name) => name !== item.object);
        for (const name of others) assert.equal(name in item, false, `${item.name} has no ${name}`);
      }
      for (const item of await status('resolve=false')) assert.ok(!('trigger' in item || 'endpoint' in item || 'service' in item), item.name);
    });

    it('sorts by activity, name and errors, filters by object, and cuts at limit', async () => {
      assert.deepEqual((await status('object=endpoint&sort=-lastActivity')).map((item) => item.name), ['st-b', 'st-a', 'st-c'], 'newest first, never seen last');
      assert.deepEqual((await status('object=endpoint&sort=lastActivity')).map((item) => item.name), ['st-a', 'st-b', 'st-c'], 'oldest first, never seen last');
      assert.deepEqual((await status('object=endpoint&sort=-lastActivity&limit=2')).map((item) => item.name), ['st-b', 'st-a']);
      assert.deepEqual((await status('object=endpoint&sort=lastActivity&limit=1')).map((item) => item.name), ['st-a']);
      assert.deepEqual((await status('sort=name')).map((item) => item.name), ['bad', 'fleet', 'good', 'idle', 'lib', 'off', 'st-a', 'st-b', 'st-c']);
      assert.deepEqual((await status('sort=name&limit=3')).map((item) => item.name), ['bad', 'fleet', 'good']);
      const ascending = await status('object=trigger&sort=errors');
      assert.equal(ascending.at(-1)!.name, 'bad', 'the most errors last');
      assert.deepEqual((await status('limit=1')).map((item) => item.name), ['bad']);
      const objects = (items: Item[]) => [...new Set(items.map((item) => item.object))].sort();
      assert.deepEqual(objects(await status('object=trigger,service')), ['service', 'trigger']);
      assert.deepEqual(objects(await status('object=trigger&object=service')), ['service', 'trigger']);
      assert.deepEqual(objects(await status('object=endpoint')), ['endpoint']);
      const newest = await status('sort=-lastActivity');
      assert.deepEqual(newest.slice(-4).map((item) => item.lastActivity), [null, null, null, null], 'off, lib, idle and st-c have no activity: last');
      assert.deepEqual(
        newest.slice(0, -4).map((item) => item.lastActivity),
        newest
          .slice(0, -4)
          .map((item) => item.lastActivity)
          .sort()
          .reverse(),
      );
    });

    it('counts the fields the objects use from a census, answers it cached and refreshes it behind the answer', async () => {
      const first = await fields();
      assert.equal(first.truncated, false);
      assert.ok(Date.parse(first.computedAt) <= Date.now());
      const count = (census: { items: Field[] }, object: string, field: string) => census.items.find((item) => item.object === object && item.field === field)?.count;
      assert.equal(count(first, 'endpoint', 'statusDetails.fw'), 2);
      assert.equal(count(first, 'endpoint', 'statusDetails.level'), 1);
      assert.equal(count(first, 'endpoint', 'parameters.interval'), 1);
      assert.equal(count(first, 'endpoint', 'storage.calibration'), 1);
      assert.equal(count(first, 'endpoint', 'tags.site'), 2, 'st-a has two site tags and counts once');
      assert.equal(count(first, 'endpoint', 'tags.battery'), 1);
      assert.equal(count(first, 'trigger', 'globals.threshold'), 1);
      assert.equal(count(first, 'endpoint', 'statusDetails.secret'), undefined, "another account's field");
      assert.ok(first.items.some((item) => item.object === 'service' && item.field.startsWith('options.')), JSON.stringify(first.items));
      // Endpoints' fields, then services', then triggers'; each the most used first.
      const order = { endpoint: 0, service: 1, trigger: 2 } as Record<string, number>;
      for (let i = 1; i < first.items.length; i++) {
        const [a, b] = [first.items[i - 1]!, first.items[i]!];
        assert.ok(order[a.object]! < order[b.object]! || (a.object === b.object && a.count >= b.count), JSON.stringify([a, b]));
      }

      // No call since the first: the next one answers that census and starts a refresh.
      await createEndpoint(service, tenant.token, { key: 'st-d', serviceId: idleId, statusDetails: { fw: '3.0', battery: 80 } });
      const stale = await fields();
      assert.equal(stale.computedAt, first.computedAt, 'answered from the cache');
      assert.equal(count(stale, 'endpoint', 'statusDetails.battery'), undefined);
      const fresh = await waitFor(async () => {
        const census = await fields();
        return count(census, 'endpoint', 'statusDetails.battery') === 1 ? census : undefined;
      }, 'the refreshed census');
      assert.equal(count(fresh, 'endpoint', 'statusDetails.fw'), 3);
      assert.ok(Date.parse(fresh.computedAt) > Date.parse(first.computedAt));
      assert.deepEqual(new Set((await fields('object=trigger')).items.map((item) => item.object)), new Set(['trigger']));
      const deleted = await service.request('DELETE', '/endpoints/k.st-d', { token: tenant.token });
      assert.equal(deleted.status, 204);
    });

    it("covers the acting account only: another account's objects never appear", async () => {
      const theirs = await status('resolve=true', other.token);
      assert.deepEqual(theirs.map((item) => item.name).sort(), ['o-a', 'other-bad', 'other-fleet']);
      assert.deepEqual([named(theirs, 'other-bad').errors, named(theirs, 'other-fleet').endpoints], [1, { connected: 1, unavailable: 0 }]);
      const ours = await status('limit=1000');
      const theirIds = new Set(theirs.map((item) => item.id));
      assert.ok(ours.every((item) => !theirIds.has(item.id)));
      const census = await fields('', other.token);
      assert.ok(census.items.some((item) => item.object === 'endpoint' && item.field === 'statusDetails.secret' && item.count === 1));
      const tenantOnly = ['statusDetails.fw', 'statusDetails.level', 'parameters.interval', 'storage.calibration', 'tags.site', 'globals.threshold'];
      assert.deepEqual(census.items.filter((item) => tenantOnly.includes(item.field)), []);
      // The root token acting in the tenant sees the tenant's objects.
      const acting = await service.request('GET', '/metrics/status?object=service', { account: tenant.accountId });
      assert.deepEqual((acting.body.items as Item[]).map((item) => item.name).sort(), ['fleet', 'idle']);
    });

    it('refuses a bad sort, object, limit, window or flag with the one error body', async () => {
      for (const query of ['sort=errors-', 'sort=', 'sort=-name', 'object=device', 'object=trigger,device', 'object=', 'limit=0', 'limit=1001', 'limit=x', 'since=yesterday', 'resolve=maybe']) {
        assertError(await service.request('GET', `/metrics/status?${query}`, { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', query);
      }
      assertError(await service.request('GET', '/metrics/fields?object=device', { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', 'fields object');
      assertError(await service.request('GET', '/metrics/status', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
      assertError(await service.request('GET', '/metrics/fields', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    // Last: it adds a trigger and failures the tests above do not expect.
    it("counts an endpoint's errors from the account log: failed runs on its events, and its service adds them up", async () => {
      await createTrigger(tenant.token, { name: 'parser', events: ['raw'], script: `throw new Error('cannot parse');` });
      for (let n = 0; n < 3; n++) await service.request('POST', '/events', { token: tenant.token, body: { type: 'raw', endpoint: 'k.st-b' } });
      await service.request('POST', '/events', { token: other.token, body: { type: 'tick', endpoint: 'k.o-a' } });
      const endpoints = await waitFor(async () => {
        const items = await status('object=endpoint');
        return items[0]?.name === 'st-b' && items[0].errors === 3 ? items : undefined;
      }, 'three errors of st-b, the most errors first');
      assert.deepEqual(endpoints.map((item) => [item.name, item.errors]), [['st-b', 3], ['st-a', 0], ['st-c', 0]]);
      assert.equal(named(await status('object=endpoint&sort=name'), 'st-b').errors, 3, 'counted whatever the sort');
      assert.equal(named(await status('object=service'), 'fleet').errors, 3);
      assert.equal(named(await status(`object=endpoint&since=${new Date(Date.now() + 60_000).toISOString()}`), 'st-b').errors, 0, 'outside the window');
      // The other account's event ran its own failing trigger: one error of its own, none of st-b's.
      await waitFor(async () => (named(await status('object=endpoint', other.token), 'o-a').errors === 1 ? true : undefined), "the other account's own error");
      assert.deepEqual((await status('object=endpoint', other.token)).map((item) => item.name), ['o-a']);
    });
  });
}
