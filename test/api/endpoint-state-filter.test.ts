// GET /endpoints?state= and GET /endpoint/count?state=: the state the device protocols set (a simulated LwM2M
// device registering makes its endpoint connected), with the other filters, per account, and a bad value.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`endpoint state filter (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const keys = async (query: string, token = tenant.token): Promise<string[]> => {
      const found = await service.request('GET', `/endpoints?${query}`, { token });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      return (found.body.items as { key: string }[]).map((endpoint) => endpoint.key);
    };
    const count = async (query: string, token = tenant.token): Promise<number> => {
      const counted = await service.request('GET', `/endpoint/count?${query}`, { token });
      assert.equal(counted.status, 200, JSON.stringify(counted.body));
      return counted.body.count as number;
    };

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'state-filter');
      other = await createAccount(service, 'state-filter-other');
      const serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
      const otherServiceId = await createService(service, other.token, { name: 'lwm2m', type: 'lwm2m' });
      await createEndpoint(service, tenant.token, { key: 'state-a', serviceId, tags: ['site:berlin'] });
      await createEndpoint(service, tenant.token, { key: 'state-b', serviceId, tags: ['site:paris'] });
      await createEndpoint(service, tenant.token, { key: 'state-c', serviceId, tags: ['site:berlin'] });
      await createEndpoint(service, other.token, { key: 'other-a', serviceId: otherServiceId });
      for (const key of ['state-a', 'state-b', 'other-a']) {
        const device = await devices.start(key);
        assert.equal(await device.register(), '2.01', key);
      }
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('lists and counts the endpoints in a state, with the other filters', async () => {
      assert.deepEqual(await keys('state=connected'), ['state-a', 'state-b']);
      assert.deepEqual(await keys('state=unavailable'), ['state-c']);
      assert.deepEqual(await keys(''), ['state-a', 'state-b', 'state-c'], 'no state: all');
      assert.deepEqual(await keys('state=connected&tag=site:berlin'), ['state-a']);
      assert.deepEqual(await keys('state=unavailable&keyPrefix=state-a'), []);
      assert.equal(await count('state=connected'), 2);
      assert.equal(await count('state=unavailable'), 1);
      assert.equal(await count('state=connected&tag=site:paris'), 1);
      const page = await service.request('GET', '/endpoints?state=connected&limit=1', { token: tenant.token });
      assert.equal(page.body.total, 2, 'the total counts the filtered endpoints');
    });

    it("covers the acting account only: another account's connected endpoint is not counted", async () => {
      assert.deepEqual(await keys('state=connected', other.token), ['other-a']);
      assert.equal(await count('state=connected', other.token), 1);
      assert.equal(await count('state=unavailable', other.token), 0);
      // The root account acting in its own account sees neither tenant's endpoints.
      assert.equal(await count('state=connected', ADMIN_TOKEN), 0);
    });

    it('refuses a state that is none of connected and unavailable', async () => {
      for (const url of ['/endpoints?state=missing', '/endpoint/count?state=CONNECTED', '/endpoints?state=']) {
        const refused = await service.request('GET', url, { token: tenant.token });
        assertError(refused, 400, 'IOTB_REQUEST_VALIDATION', url);
      }
    });
  });
}
