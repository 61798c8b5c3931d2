import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices } from '../helpers/mqtt.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * `POST /endpoints/bulk` (issue "device log-ins at fleet scale"): many endpoints with their credentials in one
 * request, each item created or refused on its own and reported at its index.
 */
for (const dialect of DIALECTS) {
  describe(`bulk endpoint creation (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let mqttService: string;
    let otherService: string;
    const devices = new MqttDevices(() => service.ports.mqtt!);

    before(async () => {
      // Chosen device passwords of at least 12 characters: the service option, checked per item.
      service = await startService(dialect.name, { devicePasswordMinLength: 12 });
      tenant = await createAccount(service, 'bulk tenant');
      other = await createAccount(service, 'bulk other');
      mqttService = await createService(service, tenant.token, { name: 'meters', type: 'mqtt' });
      otherService = await createService(service, other.token, { name: 'their meters', type: 'mqtt' });
    });
    after(async () => {
      await devices.closeAll();
      await service?.stop();
    });

    const bulk = (token: string, items: unknown) => service.request('POST', '/endpoints/bulk', { token, body: { items } });

    it('creates every item it can, reports each at its index, and the generated secrets log in over MQTT', async () => {
      await createEndpoint(service, tenant.token, { key: 'taken-1', serviceId: mqttService });
      await createEndpoint(service, other.token, { key: 'theirs-1', serviceId: otherService });
      const items = [
        { key: 'bulk-1', serviceId: mqttService, tags: ['site:a'], credentials: { generate: true } },
        { key: 'bulk-2', serviceId: mqttService, credentials: { password: 'chosen-password-2' } },
        { key: 'bulk-3', serviceId: mqttService },
        { key: 'taken-1', serviceId: mqttService, credentials: { generate: true } },
        { key: 'bulk-5', serviceId: mqttService, credentials: { password: 'ten-chars!' } },
        { key: 'bulk-6', serviceId: otherService, credentials: { generate: true } },
        { key: 'theirs-1', serviceId: mqttService, credentials: { generate: true } },
        { key: 'bulk-8', serviceId: mqttService, credentials: { generate: true } },
      ];
      const response = await bulk(tenant.token, items);
      assert.equal(response.status, 200, JSON.stringify(response.body));
      assert.equal(response.headers.get('cache-control'), 'no-store', 'generated secrets are in this answer');
      const { created, failed, items: results } = response.body;
      assert.deepEqual([created, failed], [4, 4]);
      assert.deepEqual(
        results.map((result: { index: number; status: number; error?: { code: string } }) => [result.index, result.status, result.error?.code]),
        [
          [0, 201, undefined],
          [1, 201, undefined],
          [2, 201, undefined],
          [3, 409, 'IOTB_ENDPOINT_KEY_TAKEN'],
          [4, 400, 'IOTB_REQUEST_VALIDATION'],
          [5, 404, 'IOTB_SERVICE_NOT_FOUND'],
          [6, 409, 'IOTB_ENDPOINT_KEY_IN_USE'],
          [7, 201, undefined],
        ],
      );
      for (const failure of results.filter((result: { status: number }) => result.status !== 201)) {
        assert.deepEqual(Object.keys(failure).sort(), ['error', 'index', 'status']);
      }
      const [first, second, third, , , , , eighth] = results;
      assert.equal(first.endpoint.key, 'bulk-1');
      assert.deepEqual(first.endpoint.tags, ['site:a']);
      assert.match(first.endpoint.credentials.password, /^[A-Za-z0-9_-]{32}$/);
      assert.deepEqual(second.endpoint.credentials, {}, 'a chosen password is not echoed');
      assert.equal(third.endpoint.credentials, undefined, 'no credentials asked, none reported');

      // What was created is there and logs in; what was refused is not there, in no account.
      assert.equal(await devices.refusal('bulk-1', first.endpoint.credentials.password), 0);
      assert.equal(await devices.refusal('bulk-8', eighth.endpoint.credentials.password), 0);
      assert.equal(await devices.refusal('bulk-2', 'chosen-password-2'), 0);
      assert.equal(await devices.refusal('bulk-1', eighth.endpoint.credentials.password), 4, 'one device’s secret is not another’s');
      assert.equal((await service.request('GET', '/endpoints/k.bulk-5', { token: tenant.token })).status, 404);
      assert.equal((await service.request('GET', '/endpoints/k.bulk-6', { token: other.token })).status, 404, 'nothing created in the other account');
      assert.equal((await service.request('GET', '/endpoint/count?keyPrefix=bulk-', { token: tenant.token })).body.count, 4);
      assert.equal((await service.request('GET', '/endpoints/k.bulk-1/credentials', { token: tenant.token })).body.kind, 'generated');
      assert.equal((await service.request('GET', '/endpoints/k.bulk-2/credentials', { token: tenant.token })).body.kind, 'chosen');
    });

    it('answers without no-store when nothing was generated, and 400 for a request that is not a list of endpoints', async () => {
      const plain = await bulk(tenant.token, [{ key: 'plain-1', serviceId: mqttService }]);
      assert.equal(plain.status, 200);
      assert.equal(plain.headers.get('cache-control'), null);

      assertError(await bulk(tenant.token, []), 400, 'IOTB_REQUEST_VALIDATION', 'no items');
      assertError(await bulk(tenant.token, 'meters'), 400, 'IOTB_REQUEST_VALIDATION', 'not a list');
      assertError(await bulk(tenant.token, [{ key: 'x', serviceId: mqttService, colour: 'red' }]), 400, 'IOTB_REQUEST_VALIDATION', 'unknown field');
      assertError(await bulk(tenant.token, [{ key: 'x', serviceId: mqttService, credentials: { generate: false } }]), 400, 'IOTB_REQUEST_VALIDATION', 'generate false');
      const short = await bulk(tenant.token, [{ key: 'x', serviceId: mqttService, credentials: { password: 'short' } }]);
      assertError(short, 400, 'IOTB_REQUEST_VALIDATION', 'a password under 8 characters fails the whole request');
      assert.equal(short.body.error.details[0].path, '/items/0/credentials/password', 'the error names the item');
      const single = await service.request('PUT', '/endpoints/k.plain-1/credentials', { token: tenant.token, body: { password: 'ten-chars!' } });
      assertError(single, 400, 'IOTB_REQUEST_VALIDATION', 'the raised minimum holds for one endpoint too');
      assert.match(single.body.error.message, /12 to 256/);
      const tooMany = Array.from({ length: 1001 }, (_, i) => ({ key: `many-${i}`, serviceId: mqttService }));
      assertError(await bulk(tenant.token, tooMany), 400, 'IOTB_REQUEST_VALIDATION', '1001 items');
      assertError(await service.request('POST', '/endpoints/bulk', { token: tenant.token, body: { items: [], extra: 1 } }), 400, 'IOTB_REQUEST_VALIDATION', 'extra field');
      assertError(await service.request('POST', '/endpoints/bulk', { token: null, body: { items: [{ key: 'x', serviceId: mqttService }] } }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
      assert.equal((await service.request('GET', '/endpoint/count?keyPrefix=many-', { token: tenant.token })).body.count, 0, 'a refused request creates nothing');
    });

    it('creates 1,000 endpoints with generated secrets in one request', async () => {
      const items = Array.from({ length: 1000 }, (_, i) => ({ key: `fleet-${String(i).padStart(4, '0')}`, serviceId: mqttService, credentials: { generate: true } }));
      const response = await bulk(tenant.token, items);
      assert.equal(response.status, 200);
      assert.deepEqual([response.body.created, response.body.failed], [1000, 0]);
      const secrets = new Set(response.body.items.map((item: { endpoint: { credentials: { password: string } } }) => item.endpoint.credentials.password));
      assert.equal(secrets.size, 1000, 'each secret is its own');
      const last = response.body.items[999].endpoint;
      assert.equal(await devices.refusal(last.key, last.credentials.password), 0);
    });

    it('writes several chunks: a key repeated in the request, a key taken and the account limit reached midway are refused item by item', async () => {
      // Items are written 200 to a transaction; a chunk refused as a whole is written again one by one.
      const limited = await createAccount(service, 'bulk limited');
      const limitedService = await createService(service, limited.token, { name: 'limited meters', type: 'mqtt' });
      await createEndpoint(service, limited.token, { key: 'pre-taken', serviceId: limitedService });
      const limits = await service.request('PUT', `/super/accounts/${limited.accountId}/limits`, { body: { maxEndpoints: 430 } });
      assert.equal(limits.status, 200, JSON.stringify(limits.body));
      const items = Array.from({ length: 450 }, (_, i) => ({ key: `lim-${String(i).padStart(3, '0')}`, serviceId: limitedService, credentials: { generate: true } }));
      items[250] = { ...items[250]!, key: 'lim-010' }; // the second chunk repeats a key of the first
      items[300] = { ...items[300]!, key: 'pre-taken' };
      const response = await bulk(limited.token, items);
      assert.equal(response.status, 200, JSON.stringify(response.body));
      // 1 endpoint before + 200 (first chunk) + 198 (second, item by item) + 31 (third, item by item, up to 430).
      assert.deepEqual([response.body.created, response.body.failed], [429, 21]);
      const codes = new Map<number, string>(response.body.items.filter((item: { status: number }) => item.status !== 201).map((item: { index: number; error: { code: string } }) => [item.index, item.error.code]));
      assert.equal(codes.get(250), 'IOTB_ENDPOINT_KEY_TAKEN');
      assert.equal(codes.get(300), 'IOTB_ENDPOINT_KEY_TAKEN');
      for (let i = 431; i < 450; i++) assert.equal(codes.get(i), 'IOTB_ACCOUNT_ENDPOINT_LIMIT', `item ${i}`);
      assert.equal(codes.size, 21);
      assert.deepEqual(
        response.body.items.map((item: { index: number }) => item.index),
        items.map((_, i) => i),
        'every item reported at its index, in order',
      );
      // Created one by one after its chunk was refused: there, with the secret it was given.
      const late = response.body.items[430].endpoint;
      assert.equal(late.key, 'lim-430');
      assert.equal(await devices.refusal(late.key, late.credentials.password), 0);
      assert.equal((await service.request('GET', '/endpoints/k.lim-430/credentials', { token: limited.token })).body.kind, 'generated');
      assert.equal((await service.request('GET', '/endpoint/count?keyPrefix=lim-', { token: limited.token })).body.count, 429);
      assert.equal((await service.request('GET', '/endpoints/k.lim-449', { token: limited.token })).status, 404, 'refused items are not there');
      assert.equal((await service.request('GET', '/endpoints/k.lim-010/credentials', { token: limited.token })).body.kind, 'generated', 'the first holder of a repeated key keeps its own secret');
    });
  });
}
