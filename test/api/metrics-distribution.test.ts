// GET /metrics/distribution (endpoints counted by state, service, protocol, tags, a status detail) and
// GET /metrics/executions (trigger runs and failures in a period): per account, and bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { ADMIN_TOKEN, DIALECTS, startService, type TestService } from '../helpers/service.js';

type Values = { value: unknown; count: number }[];

for (const dialect of DIALECTS) {
  describe(`metrics (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let lwm2mId: string;
    let mqttId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const distribution = async (field: string, token = tenant.token): Promise<Values> => {
      const answer = await service.request('GET', `/metrics/distribution?field=${encodeURIComponent(field)}`, { token });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(Object.keys(answer.body), ['values']);
      return answer.body.values as Values;
    };

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'metrics');
      other = await createAccount(service, 'metrics-other');
      lwm2mId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
      mqttId = await createService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
      const otherId = await createService(service, other.token, { name: 'lwm2m', type: 'lwm2m' });
      await createEndpoint(service, tenant.token, { key: 'm-a', serviceId: lwm2mId, tags: ['site:berlin', 'battery'], statusDetails: { fw: '1.0', level: 3 } });
      await createEndpoint(service, tenant.token, { key: 'm-b', serviceId: lwm2mId, tags: ['site:berlin'], statusDetails: { fw: '1.0', ok: true } });
      await createEndpoint(service, tenant.token, { key: 'm-c', serviceId: lwm2mId, tags: ['site:paris'], statusDetails: { fw: '2.0' } });
      await createEndpoint(service, tenant.token, { key: 'm-d', serviceId: mqttId, tags: [] });
      await createEndpoint(service, other.token, { key: 'o-a', serviceId: otherId, tags: ['site:berlin'] });
      for (const key of ['m-a', 'm-b', 'o-a']) {
        const device = await devices.start(key);
        assert.equal(await device.register(), '2.01', key);
      }
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('counts the endpoints by state, service, protocol and tag, the most frequent first', async () => {
      assert.deepEqual(await distribution('state'), [
        { value: 'connected', count: 2 },
        { value: 'unavailable', count: 2 },
      ]);
      assert.deepEqual(await distribution('serviceId'), [
        { value: lwm2mId, count: 3 },
        { value: mqttId, count: 1 },
      ]);
      assert.deepEqual(await distribution('protocol'), [
        { value: 'lwm2m', count: 3 },
        { value: 'mqtt', count: 1 },
      ]);
      assert.deepEqual(await distribution('tags'), [
        { value: 'site:berlin', count: 2 },
        { value: 'battery', count: 1 },
        { value: 'site:paris', count: 1 },
      ]);
    });

    it('counts a status detail by its JSON value; endpoints without it are left out', async () => {
      assert.deepEqual(await distribution('statusDetails.fw'), [
        { value: '1.0', count: 2 },
        { value: '2.0', count: 1 },
      ]);
      assert.deepEqual(await distribution('statusDetails.level'), [{ value: 3, count: 1 }]);
      assert.deepEqual(await distribution('statusDetails.ok'), [{ value: true, count: 1 }]);
      assert.deepEqual(await distribution('statusDetails.none'), []);
      const limited = await service.request('GET', '/metrics/distribution?field=tags&limit=1', { token: tenant.token });
      assert.deepEqual(limited.body.values, [{ value: 'site:berlin', count: 2 }]);
    });

    it("covers the acting account only: another account's endpoints are not counted", async () => {
      assert.deepEqual(await distribution('state', other.token), [{ value: 'connected', count: 1 }]);
      assert.deepEqual(await distribution('tags', other.token), [{ value: 'site:berlin', count: 1 }]);
      assert.deepEqual(await distribution('state', ADMIN_TOKEN), [], 'the root account has no endpoints of its own');
      // The root token acting in the tenant sees the tenant's counts.
      const acting = await service.request('GET', '/metrics/distribution?field=protocol', { account: tenant.accountId });
      assert.equal(acting.body.values.length, 2);
    });

    it('refuses an unknown field, a missing one and a bad limit with the one error body', async () => {
      for (const url of ['/metrics/distribution?field=color', '/metrics/distribution?field=statusDetails.', '/metrics/distribution', '/metrics/distribution?field=state&limit=0', '/metrics/distribution?field=state&limit=x']) {
        assertError(await service.request('GET', url, { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', url);
      }
      const unknown = await service.request('GET', '/metrics/distribution?field=color', { token: tenant.token });
      assert.match(unknown.body.error.message, /Unknown field "color"/);
      assertError(await service.request('GET', '/metrics/distribution?field=state', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    it('counts trigger runs and failures in a period, per account', async () => {
      const started = new Date().toISOString();
      const good = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'good', events: ['tick'], script: `log('ok');` } });
      const bad = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'bad', events: ['tick'], script: `trigger.exit('broken');` } });
      assert.equal(bad.status, 201, JSON.stringify(bad.body));
      for (let n = 0; n < 2; n++) await service.request('POST', '/events', { token: tenant.token, body: { type: 'tick' } });
      await service.request('POST', '/triggers', { token: other.token, body: { name: 'other', events: ['tick'], script: `trigger.exit('other');` } });
      await service.request('POST', '/events', { token: other.token, body: { type: 'tick' } });
      const counts = (query: string, token = tenant.token) => service.request('GET', `/metrics/executions?${query}`, { token });
      const all = await waitFor(async () => {
        const answer = await counts(`from=${started}`);
        return answer.body.runs === 4 ? answer.body : undefined;
      }, 'four runs counted');
      assert.equal(all.failed, 2);
      assert.equal(all.from, started);
      const others = await waitFor(async () => {
        const answer = await counts(`from=${started}`, other.token);
        return answer.body.runs === 1 ? answer.body : undefined;
      }, "the other account's run");
      assert.equal(others.failed, 1);
      const oneTrigger = await counts(`from=${started}&triggerId=${good.body.id}`);
      assert.deepEqual([oneTrigger.body.runs, oneTrigger.body.failed], [2, 0]);
      const before = await counts(`from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z`);
      assert.deepEqual([before.body.runs, before.body.failed], [0, 0], 'nothing ran in 2020');
      assertError(await counts(`from=${started}&to=2020-01-01T00:00:00Z`), 400, 'IOTB_REQUEST_VALIDATION', 'from after to');
      assertError(await counts('from=yesterday'), 400, 'IOTB_REQUEST_VALIDATION', 'not a time');
      assertError(await counts(''), 400, 'IOTB_REQUEST_VALIDATION', 'no from');
    });
  });
}
