import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * The cross-tenant matrix: account A's token must get 403 or 404 on every route for every object of
 * account B (a sibling), and nothing of B may change. Sub-account tokens never reach their parent.
 */
for (const dialect of DIALECTS) {
  describe(`tenancy matrix (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let bChild: TestAccount;
    const bObjects: Record<string, string> = {};

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'tenant-a');
      b = await createAccount(service, 'tenant-b');
      bChild = await createAccount(service, 'tenant-b-child', { token: b.token });
      await createService(service, a.token);
      bObjects.serviceId = await createService(service, b.token, { name: 'b-service' });
      const endpoint = await createEndpoint(service, b.token, { key: 'b-device', serviceId: bObjects.serviceId, tags: ['secret:b'] });
      bObjects.endpointId = endpoint.id;
      await service.request('PUT', '/endpoints/k.b-device/storage/creds', { token: b.token, body: { psk: 'b-secret' } });
      assert.equal((await service.request('PUT', '/endpoints/k.b-device/credentials', { token: b.token, body: { password: 'b-device-secret' } })).status, 204);
      const user = await service.request('POST', '/users', { token: b.token, body: { email: 'b@example.com', password: 'b-password-1' } });
      bObjects.userId = user.body.id;
      const token = await service.request('POST', '/tokens', { token: b.token, body: { name: 'b-extra' } });
      bObjects.tokenId = token.body.id;
    });
    after(() => service?.stop());

    /** Every route with an object id, addressed with B's ids. */
    const routes = (): [string, string, unknown?][] => [
      ['GET', `/accounts/${b.accountId}`],
      ['PUT', `/accounts/${b.accountId}`, { name: 'taken over' }],
      ['DELETE', `/accounts/${b.accountId}?cascade=true`],
      ['GET', `/accounts/${bChild.accountId}`],
      ['PUT', `/accounts/${bChild.accountId}`, { name: 'taken over' }],
      ['DELETE', `/accounts/${bChild.accountId}?cascade=true`],
      ['GET', `/services/${bObjects.serviceId}`],
      ['PUT', `/services/${bObjects.serviceId}`, { name: 'x', type: 'mqtt' }],
      ['DELETE', `/services/${bObjects.serviceId}?cascade=true`],
      ['POST', '/endpoints', { key: 'intruder', serviceId: bObjects.serviceId }],
      ['GET', `/endpoints/${bObjects.endpointId}`],
      ['GET', '/endpoints/k.b-device'],
      ['PUT', `/endpoints/${bObjects.endpointId}`, { key: 'x', serviceId: bObjects.serviceId }],
      ['PATCH', `/endpoints/${bObjects.endpointId}`, { tags: ['owned'] }],
      ['PATCH', '/endpoints/k.b-device', { tags: ['owned'] }],
      ['DELETE', `/endpoints/${bObjects.endpointId}`],
      ['DELETE', '/endpoints/k.b-device'],
      ['PATCH', `/endpoints?serviceId=${bObjects.serviceId}`, { addTags: ['owned'] }],
      ['GET', `/endpoints/${bObjects.endpointId}/storage`],
      ['GET', `/endpoints/${bObjects.endpointId}/storage/creds`],
      ['GET', '/endpoints/k.b-device/storage/creds'],
      ['PUT', `/endpoints/${bObjects.endpointId}/storage/creds`, { psk: 'mine' }],
      ['DELETE', `/endpoints/${bObjects.endpointId}/storage/creds`],
      ['GET', `/endpoints/${bObjects.endpointId}/credentials`],
      ['GET', '/endpoints/k.b-device/credentials'],
      ['PUT', `/endpoints/${bObjects.endpointId}/credentials`, { password: 'hijacked-password' }],
      ['PUT', '/endpoints/k.b-device/credentials', { password: 'hijacked-password' }],
      ['DELETE', `/endpoints/${bObjects.endpointId}/credentials`],
      ['DELETE', '/endpoints/k.b-device/credentials'],
      ['GET', `/users/${bObjects.userId}`],
      ['PUT', `/users/${bObjects.userId}`, { password: 'hijacked-password' }],
      ['DELETE', `/users/${bObjects.userId}`],
      ['GET', `/tokens/${bObjects.tokenId}`],
      ['DELETE', `/tokens/${bObjects.tokenId}`],
    ];

    it("gives A's token 403/404 on every route for B's objects", async () => {
      for (const [method, path, body] of routes()) {
        const response = await service.request(method, path, { token: a.token, body });
        assert.ok([403, 404].includes(response.status), `${method} ${path} answered ${response.status} ${JSON.stringify(response.body)}`);
        assert.match(response.body.error.code, /^IOTB_/, `${method} ${path}`);
      }
    });

    it("does not let A attach its own objects to B's (parent account, service)", async () => {
      const aService = await createService(service, a.token, { name: 'a-own' });
      const own = await createEndpoint(service, a.token, { key: 'a-device', serviceId: aService });
      const attempts: [string, string, unknown][] = [
        ['POST', '/accounts', { name: 'implant', parentId: b.accountId }],
        ['POST', '/accounts', { name: 'implant', parentId: bChild.accountId }],
        ['PATCH', `/endpoints/${own.id}`, { serviceId: bObjects.serviceId }],
        ['PUT', `/endpoints/${own.id}`, { key: 'a-device', serviceId: bObjects.serviceId }],
      ];
      for (const [method, path, body] of attempts) {
        const response = await service.request(method, path, { token: a.token, body });
        assert.equal(response.status, 404, `${method} ${path} ${JSON.stringify(body)} answered ${response.status}`);
      }
      assert.equal((await service.request('GET', `/endpoints/${own.id}`, { token: a.token })).body.serviceId, aService);
      assert.equal((await service.request('GET', '/accounts', { token: b.token })).body.total, 1, 'B still has one sub-account');
    });

    it("refuses A's token acting in B or B's sub-account (403), on every route", async () => {
      const paths = ['/services', '/endpoints', '/endpoint/count', '/accounts', '/tokens', '/users', '/auth/whoami', `/endpoints/${bObjects.endpointId}`, `/endpoints/${bObjects.endpointId}/credentials`];
      for (const accountId of [b.accountId, bChild.accountId, 'no-such-account']) {
        for (const path of paths) {
          const response = await service.request('GET', path, { token: a.token, account: accountId });
          assert.equal(response.status, 403, `GET ${path} as ${accountId}`);
          assert.equal(response.body.error.code, 'IOTB_AUTH_ACCOUNT_FORBIDDEN');
        }
        const create = await service.request('POST', '/services', { token: a.token, account: accountId, body: { name: 'x', type: 'udp' } });
        assert.equal(create.status, 403);
      }
    });

    it('never reaches upwards: a sub-account token gets 403 for its parent and the root', async () => {
      for (const accountId of [b.accountId, service.rootAccountId]) {
        const response = await service.request('GET', '/services', { token: bChild.token, account: accountId });
        assert.equal(response.status, 403);
      }
      assert.equal((await service.request('GET', `/accounts/${b.accountId}`, { token: bChild.token })).status, 404);
      assert.equal((await service.request('GET', `/services/${bObjects.serviceId}`, { token: bChild.token })).status, 404);
    });

    it("lists none of B's objects to A", async () => {
      const lists = ['/services', '/endpoints', '/accounts?descendants=true', '/tokens?type=api&type=app&type=user', '/users'];
      for (const path of lists) {
        const response = await service.request('GET', path, { token: a.token });
        assert.equal(response.status, 200, path);
        const text = JSON.stringify(response.body);
        for (const id of [b.accountId, bChild.accountId, ...Object.values(bObjects)]) assert.ok(!text.includes(id), `${path} leaks ${id}`);
      }
      const own = (await service.request('GET', '/endpoint/count', { token: a.token })).body.count;
      assert.deepEqual((await service.request('GET', '/endpoint/count?total=true&tag=secret:b', { token: a.token })).body, { count: 0, total: own });
      const bulk = await service.request('PATCH', '/endpoints?tag=secret:b', { token: a.token, body: { addTags: ['owned'] } });
      assert.deepEqual(bulk.body, { updated: 0 });
    });

    it("left B's data exactly as it was", async () => {
      const endpoint = await service.request('GET', '/endpoints/k.b-device', { token: b.token });
      assert.equal(endpoint.status, 200);
      assert.deepEqual(endpoint.body.tags, ['secret:b']);
      assert.equal((await service.request('GET', '/endpoints/k.b-device/storage/creds', { token: b.token })).body.value.psk, 'b-secret');
      assert.equal((await service.request('GET', '/endpoints/k.b-device/credentials', { token: b.token })).body.passwordSet, true);
      const device = await service.bridge.domain.endpoints.byId(b.accountId, bObjects.endpointId ?? '');
      assert.ok(device);
      assert.equal(await service.bridge.domain.credentials.verify(device, 'b-device-secret'), true);
      assert.equal(await service.bridge.domain.credentials.verify(device, 'hijacked-password'), false);
      assert.equal((await service.request('GET', `/services/${bObjects.serviceId}`, { token: b.token })).body.name, 'b-service');
      assert.equal((await service.request('GET', `/accounts/${bChild.accountId}`, { token: b.token })).body.name, 'tenant-b-child');
      assert.equal((await service.request('GET', `/tokens/${bObjects.tokenId}`, { token: b.token })).status, 200);
      const login = await service.request('POST', '/auth/login', { token: null, body: { email: 'b@example.com', password: 'b-password-1' } });
      assert.equal(login.status, 200);
      assert.equal((await service.request('GET', '/endpoint/count?tag=owned', { token: b.token })).body.count, 0);
    });

    it("lets B's parent (the root) act in B and B's child through the :accountId suffix", async () => {
      const asB = await service.request('GET', '/endpoints/k.b-device', { account: b.accountId });
      assert.equal(asB.status, 200);
      const asChild = await service.request('GET', '/auth/whoami', { token: b.token, account: bChild.accountId });
      assert.deepEqual([asChild.status, asChild.body.accountId, asChild.body.tokenAccountId], [200, bChild.accountId, b.accountId]);
    });
  });
}
