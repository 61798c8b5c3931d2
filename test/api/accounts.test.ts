import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`accounts (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;

    before(async () => {
      service = await startService(dialect.name);
    });
    after(() => service?.stop());

    it('creates sub-accounts with externalRefs and lists children or all descendants', async () => {
      const created = await service.request('POST', '/accounts', { body: { name: 'Acme', externalRefs: { crm: 'C-1001' } } });
      assert.equal(created.status, 201);
      assert.deepEqual(
        { name: created.body.name, parentId: created.body.parentId, externalRefs: created.body.externalRefs },
        { name: 'Acme', parentId: service.rootAccountId, externalRefs: { crm: 'C-1001' } },
      );
      const acme = created.body.accountId as string;
      const plant = await service.request('POST', '/accounts', { account: acme, body: { name: 'Plant 1' } });
      assert.equal(plant.body.parentId, acme);
      // parentId in the body chooses a parent within reach.
      const line = await service.request('POST', '/accounts', { body: { name: 'Line A', parentId: plant.body.accountId } });
      assert.equal(line.body.parentId, plant.body.accountId);

      const children = await service.request('GET', '/accounts', { account: acme });
      assert.deepEqual(children.body.items.map((a: { name: string }) => a.name), ['Plant 1']);
      assert.equal(children.body.total, 1);
      const all = await service.request('GET', '/accounts?descendants=true', { account: acme });
      assert.deepEqual(all.body.items.map((a: { name: string }) => a.name).sort(), ['Line A', 'Plant 1']);

      const updated = await service.request('PUT', `/accounts/${acme}`, { body: { externalRefs: { crm: 'C-1001', billing: 'B-7' } } });
      assert.equal(updated.status, 200);
      assert.deepEqual(updated.body.externalRefs, { crm: 'C-1001', billing: 'B-7' });
      assert.equal(updated.body.name, 'Acme');
      assert.deepEqual((await service.request('GET', `/accounts/${acme}`)).body.externalRefs, { crm: 'C-1001', billing: 'B-7' });
    });

    it('pages account lists and validates limits', async () => {
      const parent = await createAccount(service, 'pager');
      for (let i = 0; i < 7; i++) await service.request('POST', '/accounts', { token: parent.token, body: { name: `child ${i}` } });
      const page = await service.request('GET', '/accounts?limit=3&offset=6', { token: parent.token });
      assert.deepEqual([page.body.items.length, page.body.total, page.body.limit, page.body.offset], [1, 7, 3, 6]);
      assert.equal((await service.request('GET', '/accounts?limit=0', { token: parent.token })).status, 400);
      assert.equal((await service.request('GET', '/accounts?limit=1001', { token: parent.token })).status, 400);
      const defaults = await service.request('GET', '/accounts', { token: parent.token });
      assert.deepEqual([defaults.body.limit, defaults.body.offset], [100, 0]);
    });

    it('refuses to delete an account that owns data (409) unless cascade=true, which removes the subtree', async () => {
      const doomed = await createAccount(service, 'doomed');
      const child = await createAccount(service, 'doomed-child', { token: doomed.token });
      const serviceId = await createService(service, child.token);
      await createEndpoint(service, child.token, { key: 'e1', serviceId });
      // Triggers, their executions and the history go with the account too.
      const trigger = await service.request('POST', '/triggers', { token: child.token, body: { name: 't', events: ['job'], script: 'log(1);' } });
      assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
      assert.equal((await service.request('POST', `/triggers/${trigger.body.id}/run`, { token: child.token, body: { type: 'job' } })).status, 200);
      assert.equal((await service.request('POST', '/events', { token: child.token, body: { type: 'job', endpoint: 'k.e1' } })).status, 202);

      const refused = await service.request('DELETE', `/accounts/${doomed.accountId}`);
      assert.equal(refused.status, 409);
      assert.equal(refused.body.error.code, 'IOTB_ACCOUNT_NOT_EMPTY');
      assert.equal(refused.body.error.details.subAccounts, 1);

      const self = await service.request('DELETE', `/accounts/${doomed.accountId}?cascade=true`, { token: doomed.token });
      assert.equal(self.status, 403, 'an account cannot delete itself');

      assert.equal((await service.request('DELETE', `/accounts/${doomed.accountId}?cascade=true`)).status, 204);
      assert.equal((await service.request('GET', `/accounts/${doomed.accountId}`)).status, 404);
      assert.equal((await service.request('GET', `/accounts/${child.accountId}`)).status, 404);
      assert.equal((await service.request('GET', '/services', { token: child.token })).status, 401, "the subtree's tokens are gone");
      assert.equal((await service.request('GET', '/services', { token: doomed.token })).status, 401);
    });

    it('deletes an empty account without cascade', async () => {
      const empty = await service.request('POST', '/accounts', { body: { name: 'empty' } });
      assert.equal((await service.request('DELETE', `/accounts/${empty.body.accountId}`)).status, 204);
      assert.equal((await service.request('DELETE', `/accounts/${empty.body.accountId}`)).status, 404);
    });
  });

  describe(`services (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;

    before(async () => {
      service = await startService(dialect.name);
    });
    after(() => service?.stop());

    it('creates services with default options and keeps protocol-specific options', async () => {
      const created = await service.request('POST', '/services', { body: { name: 'factory LwM2M', type: 'lwm2m', options: { forceQueueMode: true, autoProvision: true } } });
      assert.equal(created.status, 201);
      assert.deepEqual(created.body.options, { forceQueueMode: true, keepAliveMode: 'statusDetail', coapMaxMessageSize: 1024, autoProvision: true });
      assert.equal(created.body.accountId, service.rootAccountId);

      const bad = [
        { name: 'x', type: 'carrier-pigeon' },
        { name: 'x', type: 'coap', options: { keepAliveMode: 'sometimes' } },
        { name: 'x', type: 'coap', options: { coapMaxMessageSize: 8 } },
        { name: '', type: 'coap' },
      ];
      for (const body of bad) {
        const response = await service.request('POST', '/services', { body });
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(response.body.error.code, 'IOTB_REQUEST_VALIDATION');
      }
    });

    it('lists by account and type, replaces and deletes', async () => {
      const account = await createAccount(service, 'svc-owner');
      const mqtt = await createService(service, account.token, { name: 'b mqtt', type: 'mqtt', options: { keepAliveMode: 'event' } });
      await createService(service, account.token, { name: 'a udp', type: 'udp' });
      const all = await service.request('GET', '/services', { token: account.token });
      assert.deepEqual(all.body.items.map((s: { name: string }) => s.name), ['a udp', 'b mqtt']);
      const onlyMqtt = await service.request('GET', '/services?type=mqtt', { token: account.token });
      assert.deepEqual(onlyMqtt.body.items.map((s: { id: string }) => s.id), [mqtt]);
      // The root, acting in the sub-account, sees the same list.
      assert.equal((await service.request('GET', '/services', { account: account.accountId })).body.total, 2);

      const replaced = await service.request('PUT', `/services/${mqtt}`, { token: account.token, body: { name: 'renamed', type: 'mqtt' } });
      assert.equal(replaced.status, 200);
      assert.equal(replaced.body.name, 'renamed');
      assert.deepEqual(replaced.body.options, {}, 'options left out return to their defaults (an MQTT service stores none)');

      await createEndpoint(service, account.token, { key: 'dev', serviceId: mqtt });
      const refused = await service.request('DELETE', `/services/${mqtt}`, { token: account.token });
      assert.equal(refused.status, 409);
      assert.deepEqual(refused.body.error.details, { endpoints: 1 });
      assert.equal((await service.request('DELETE', `/services/${mqtt}?cascade=true`, { token: account.token })).status, 204);
      assert.equal((await service.request('GET', `/services/${mqtt}`, { token: account.token })).status, 404);
      assert.equal((await service.request('GET', '/endpoints/k.dev', { token: account.token })).status, 404);
    });
  });
}
