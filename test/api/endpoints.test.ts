import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Endpoint } from '../../src/domain/endpoints.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`endpoints over HTTP (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let serviceId: string;
    let otherServiceId: string;

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'fleet');
      serviceId = await createService(service, account.token, { name: 'lwm2m', type: 'lwm2m' });
      otherServiceId = await createService(service, account.token, { name: 'mqtt', type: 'mqtt' });
    });
    after(() => service?.stop());

    it('creates an endpoint and reads it back by id and by k.<key>', async () => {
      const created = await createEndpoint(service, account.token, {
        key: 'urn:imei:490154203237518',
        serviceId,
        tags: ['tracker', 'site:berlin'],
        statusDetails: { secondsBeforeMissing: 3600, custom: 'x' },
        parameters: { client_id: 'tracker-1' },
        trace: true,
      });
      assert.equal(typeof created.id, 'string');
      assert.deepEqual(
        { key: created.key, serviceId: created.serviceId, accountId: created.accountId, tags: created.tags, trace: created.trace },
        { key: 'urn:imei:490154203237518', serviceId, accountId: account.accountId, tags: ['tracker', 'site:berlin'], trace: true },
      );
      assert.deepEqual(created.statusDetails, { secondsBeforeMissing: 3600, custom: 'x' });
      assert.deepEqual(created.parameters, { client_id: 'tracker-1' });
      assert.ok(Date.parse(created.createdAt) > 0 && created.createdAt === created.updatedAt);

      const byId = await service.request('GET', `/endpoints/${created.id}`, { token: account.token });
      assert.equal(byId.status, 200);
      assert.deepEqual(byId.body, created);
      const byKey = await service.request('GET', `/endpoints/k.${encodeURIComponent(created.key)}`, { token: account.token });
      assert.equal(byKey.status, 200);
      assert.deepEqual(byKey.body, created);
    });

    it('finds an endpoint by the longest key, percent-encoded (k.<key>)', async () => {
      const key = `urn:dev/${'é:/ '.repeat(62)}`;
      assert.equal(key.length, 256);
      const created = await createEndpoint(service, account.token, { key, serviceId });
      const byKey = await service.request('GET', `/endpoints/k.${encodeURIComponent(key)}`, { token: account.token });
      assert.equal(byKey.status, 200, JSON.stringify(byKey.body));
      assert.equal(byKey.body.id, created.id);
    });

    it('refuses a second endpoint with the same key in a service (409) but allows it in another service', async () => {
      await createEndpoint(service, account.token, { key: 'dup-1', serviceId });
      const again = await service.request('POST', '/endpoints', { token: account.token, body: { key: 'dup-1', serviceId } });
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'IOTB_ENDPOINT_KEY_TAKEN');

      const elsewhere = await service.request('POST', '/endpoints', { token: account.token, body: { key: 'dup-1', serviceId: otherServiceId } });
      assert.equal(elsewhere.status, 201);
      // The key now names two endpoints of the account: k.<key> must be told which one.
      const ambiguous = await service.request('GET', '/endpoints/k.dup-1', { token: account.token });
      assert.equal(ambiguous.status, 409);
      assert.equal(ambiguous.body.error.code, 'IOTB_ENDPOINT_KEY_AMBIGUOUS');
      const chosen = await service.request('GET', `/endpoints/k.dup-1?serviceId=${otherServiceId}`, { token: account.token });
      assert.equal(chosen.status, 200);
      assert.equal(chosen.body.id, elsewhere.body.id);
    });

    it('answers 400 with the error body for invalid input', async () => {
      const cases: [string, unknown][] = [
        ['missing key', { serviceId }],
        ['bad tag', { key: 'bad-tag', serviceId, tags: [':nokey'] }],
        ['wrong status detail type', { key: 'bad-sd', serviceId, statusDetails: { secondsBeforeMissing: 'soon' } }],
        ['unknown field', { key: 'bad-field', serviceId, colour: 'red' }],
        ['not JSON', '{"key": '],
      ];
      for (const [name, body] of cases) {
        const response = await service.request('POST', '/endpoints', { token: account.token, body });
        assert.equal(response.status, 400, name);
        assert.equal(response.body.error.code, 'IOTB_REQUEST_VALIDATION', name);
        assert.equal(typeof response.body.error.message, 'string', name);
      }
      const unknownService = await service.request('POST', '/endpoints', { token: account.token, body: { key: 'x', serviceId: 'nope' } });
      assert.equal(unknownService.status, 404);
      assert.equal(unknownService.body.error.code, 'IOTB_SERVICE_NOT_FOUND');
    });

    it('replaces with PUT and merges with PATCH (RFC 7396: null removes)', async () => {
      const endpoint = await createEndpoint(service, account.token, {
        key: 'patch-me',
        serviceId,
        tags: ['a', 'b:1'],
        statusDetails: { secondsBeforeMissing: 60, site: 'roof', note: 'x' },
        parameters: { client_id: 'c1', nested: { x: 1, y: 2 } },
      });
      const patched = await service.request('PATCH', '/endpoints/k.patch-me', {
        token: account.token,
        body: { statusDetails: { note: null, site: 'cellar' }, parameters: { nested: { y: null, z: 3 } }, addTags: ['c'], removeTags: ['b'] },
      });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual(patched.body.statusDetails, { secondsBeforeMissing: 60, site: 'cellar' });
      assert.deepEqual(patched.body.parameters, { client_id: 'c1', nested: { x: 1, z: 3 } });
      assert.deepEqual(patched.body.tags, ['a', 'c']);
      assert.ok(patched.body.updatedAt >= endpoint.updatedAt);

      const replaced = await service.request('PUT', `/endpoints/${endpoint.id}`, {
        token: account.token,
        body: { key: 'patched', serviceId, tags: ['only'] },
      });
      assert.equal(replaced.status, 200);
      assert.deepEqual(
        { key: replaced.body.key, tags: replaced.body.tags, statusDetails: replaced.body.statusDetails, parameters: replaced.body.parameters, trace: replaced.body.trace },
        { key: 'patched', tags: ['only'], statusDetails: {}, parameters: {}, trace: false },
      );
      assert.equal((await service.request('GET', '/endpoints/k.patch-me', { token: account.token })).status, 404);
      assert.equal((await service.request('GET', '/endpoints/k.patched', { token: account.token })).body.id, endpoint.id);
    });

    it('refuses writes of the status details the platform writes (remoteAddr, lifetime, dateLastKeepAlive); secondsBeforeMissing stays writable', async () => {
      const created = await createEndpoint(service, account.token, { key: 'heard-1', serviceId, statusDetails: { secondsBeforeMissing: 60 } });
      // The device registers: the platform writes remoteAddr and lifetime (no packet involved).
      await service.bridge.presence.connected(created as Endpoint, { protocol: 'lwm2m', remoteAddr: '127.0.0.1:56830', lifetimeSeconds: 300 });
      const heard = { secondsBeforeMissing: 60, remoteAddr: '127.0.0.1:56830', lifetime: 300 };
      const readOnly = async (method: string, url: string, body: unknown, what: string) => {
        const refused = await service.request(method, url, { token: account.token, body });
        assert.equal(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`);
        assert.equal(refused.body.error.code, 'IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY', what);
        assert.match(refused.body.error.message, /written by the platform/, what);
      };
      await readOnly('PATCH', '/endpoints/k.heard-1', { statusDetails: { remoteAddr: '192.0.2.1:5683' } }, 'PATCH remoteAddr');
      await readOnly('PATCH', '/endpoints/k.heard-1', { statusDetails: { remoteAddr: null } }, 'PATCH remoteAddr away');
      await readOnly('PATCH', '/endpoints/k.heard-1', { statusDetails: { lifetime: 86_400 } }, 'PATCH lifetime');
      await readOnly('PATCH', '/endpoints/k.heard-1', { statusDetails: { dateLastKeepAlive: new Date().toISOString() } }, 'PATCH dateLastKeepAlive');
      await readOnly('PUT', `/endpoints/${created.id}`, { key: 'heard-1', serviceId, statusDetails: { ...heard, remoteAddr: '10.0.0.1:1' } }, 'PUT remoteAddr');
      await readOnly('POST', '/endpoints', { key: 'heard-2', serviceId, statusDetails: { remoteAddr: '127.0.0.1:9' } }, 'POST remoteAddr');
      await readOnly('POST', '/endpoints', { key: 'heard-2', serviceId, statusDetails: { lifetime: 60 } }, 'POST lifetime');
      assert.equal((await service.request('GET', '/endpoints/k.heard-2', { token: account.token })).status, 404, 'nothing was created');
      assert.deepEqual((await service.request('GET', '/endpoints/k.heard-1', { token: account.token })).body.statusDetails, heard, 'nothing changed');

      // What the client read may go back unchanged; secondsBeforeMissing and the client's own details are writable.
      const echoed = await service.request('PATCH', '/endpoints/k.heard-1', { token: account.token, body: { statusDetails: { ...heard, secondsBeforeMissing: 90, note: 'n' } } });
      assert.equal(echoed.status, 200, JSON.stringify(echoed.body));
      assert.deepEqual(echoed.body.statusDetails, { ...heard, secondsBeforeMissing: 90, note: 'n' });
      // PUT replaces the client's details and keeps the platform's.
      const replaced = await service.request('PUT', `/endpoints/${created.id}`, { token: account.token, body: { key: 'heard-1', serviceId, statusDetails: { other: 1 } } });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      assert.deepEqual(replaced.body.statusDetails, { other: 1, remoteAddr: '127.0.0.1:56830', lifetime: 300 });
    });

    it('searches by service, tag, key prefix and status detail, with paging and totals', async () => {
      const search = await createService(service, account.token, { name: 'search', type: 'udp' });
      for (let i = 0; i < 12; i++) {
        await createEndpoint(service, account.token, {
          key: `meter-${String(i).padStart(2, '0')}`,
          serviceId: search,
          tags: i % 2 === 0 ? ['meter', 'floor:1'] : ['meter', 'floor:2'],
          statusDetails: i < 4 ? { secondsBeforeMissing: 900 } : {},
        });
      }
      await createEndpoint(service, account.token, { key: 'METER-upper', serviceId: search, tags: ['floor'] });
      await createEndpoint(service, account.token, { key: 'meter_x', serviceId: search });

      const list = async (query: string) => {
        const response = await service.request('GET', `/endpoints?serviceId=${search}&${query}`, { token: account.token });
        assert.equal(response.status, 200, JSON.stringify(response.body));
        return response.body as { items: { key: string }[]; total: number; limit: number; offset: number };
      };
      assert.equal((await list('')).total, 14);
      const firstPage = await list('keyPrefix=meter-&limit=5');
      assert.deepEqual(firstPage.items.map((e) => e.key), ['meter-00', 'meter-01', 'meter-02', 'meter-03', 'meter-04']);
      assert.deepEqual([firstPage.total, firstPage.limit, firstPage.offset], [12, 5, 0]);
      const lastPage = await list('keyPrefix=meter-&limit=5&offset=10');
      assert.deepEqual(lastPage.items.map((e) => e.key), ['meter-10', 'meter-11']);
      // Case-sensitive on both dialects, and `_` is not a wildcard.
      assert.deepEqual((await list('keyPrefix=METER')).items.map((e) => e.key), ['METER-upper']);
      assert.deepEqual((await list('keyPrefix=meter_')).items.map((e) => e.key), ['meter_x']);

      assert.equal((await list('tag=meter')).total, 12);
      assert.equal((await list('tag=floor')).total, 13, 'a bare name matches every value of the tag and the bare tag');
      assert.equal((await list('tag=floor:2')).total, 6);
      assert.equal((await list('tag=floor:2&tag=meter')).total, 6);
      assert.equal((await list('tag=floor:3')).total, 0);
      assert.equal((await list('hasStatusDetail=secondsBeforeMissing')).total, 4);
      assert.equal((await list('missingStatusDetail=secondsBeforeMissing')).total, 10);
      assert.equal((await list('missingStatusDetail=secondsBeforeMissing&tag=floor:1')).total, 4);

      const count = await service.request('GET', `/endpoint/count?serviceId=${search}&tag=floor:1`, { token: account.token });
      assert.deepEqual(count.body, { count: 6 });
    });

    it('bulk-updates secondsBeforeMissing and tags over a filter', async () => {
      const bulk = await createService(service, account.token, { name: 'bulk', type: 'coap' });
      for (let i = 0; i < 5; i++) {
        await createEndpoint(service, account.token, { key: `bulk-${i}`, serviceId: bulk, tags: i < 3 ? ['group:a'] : ['group:b'] });
      }
      const updated = await service.request('PATCH', `/endpoints?serviceId=${bulk}&tag=group:a`, {
        token: account.token,
        body: { secondsBeforeMissing: 120, addTags: ['checked'], removeTags: ['group'] },
      });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      assert.deepEqual(updated.body, { updated: 3 });
      const after = await service.request('GET', `/endpoints?serviceId=${bulk}`, { token: account.token });
      const byKey = Object.fromEntries(after.body.items.map((e: { key: string }) => [e.key, e]));
      assert.deepEqual(byKey['bulk-0'].tags, ['checked']);
      assert.equal(byKey['bulk-0'].statusDetails.secondsBeforeMissing, 120);
      assert.deepEqual(byKey['bulk-4'].tags, ['group:b']);
      assert.equal(byKey['bulk-4'].statusDetails.secondsBeforeMissing, undefined);
      // The tag index follows the change.
      const checked = await service.request('GET', `/endpoint/count?tag=checked`, { token: account.token });
      assert.equal(checked.body.count, 3);

      const cleared = await service.request('PATCH', `/endpoints?serviceId=${bulk}&hasStatusDetail=secondsBeforeMissing`, {
        token: account.token,
        body: { secondsBeforeMissing: null },
      });
      assert.deepEqual(cleared.body, { updated: 3 });
      const empty = await service.request('PATCH', `/endpoints?serviceId=${bulk}`, { token: account.token, body: {} });
      assert.equal(empty.status, 400);
      // A filter misspelt (`tags` for `tag`) must not turn into "every endpoint of the account".
      const misspelt = await service.request('PATCH', `/endpoints?serviceId=${bulk}&tags=group:a`, { token: account.token, body: { addTags: ['everything'] } });
      assertError(misspelt, 400, 'IOTB_REQUEST_VALIDATION', 'an unknown filter');
      const tagged = await service.request('GET', `/endpoint/count?tag=everything`, { token: account.token });
      assert.equal(tagged.body.count, 0, 'nothing was changed');
    });

    it('counts the account and, with total=true, its sub-accounts too', async () => {
      const parent = await createAccount(service, 'counting');
      const child = await createAccount(service, 'counting-child', { token: parent.token });
      const parentService = await createService(service, parent.token);
      const childService = await createService(service, child.token);
      await createEndpoint(service, parent.token, { key: 'p1', serviceId: parentService });
      await createEndpoint(service, child.token, { key: 'c1', serviceId: childService });
      await createEndpoint(service, child.token, { key: 'c2', serviceId: childService });
      assert.deepEqual((await service.request('GET', '/endpoint/count', { token: parent.token })).body, { count: 1 });
      assert.deepEqual((await service.request('GET', '/endpoint/count?total=true', { token: parent.token })).body, { count: 1, total: 3 });
      assert.deepEqual((await service.request('GET', '/endpoint/count?total=true', { token: parent.token, account: child.accountId })).body, { count: 2, total: 2 });
    });

    it('stores, lists, reads and deletes per-endpoint objects', async () => {
      await createEndpoint(service, account.token, { key: 'store-1', serviceId });
      const missing = await service.request('GET', '/endpoints/k.store-1/storage/config', { token: account.token });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'IOTB_ENDPOINT_STORAGE_NOT_FOUND');

      const value = { interval: 30, thresholds: [1.5, 2.5], label: 'ü' };
      const put = await service.request('PUT', '/endpoints/k.store-1/storage/config', { token: account.token, body: value });
      assert.equal(put.status, 200);
      assert.deepEqual(put.body.value, value);
      const got = await service.request('GET', '/endpoints/k.store-1/storage/config', { token: account.token });
      assert.deepEqual({ name: got.body.name, value: got.body.value }, { name: 'config', value });

      // A bare JSON string is a value like any other (it once came back mangled on PostgreSQL).
      await service.request('PUT', '/endpoints/k.store-1/storage/label', { token: account.token, body: '"three"' });
      assert.equal((await service.request('GET', '/endpoints/k.store-1/storage/label', { token: account.token })).body.value, 'three');
      await service.request('PUT', '/endpoints/k.store-1/storage/counter', { token: account.token, body: 42 });
      await service.request('PUT', '/endpoints/k.store-1/storage/counter', { token: account.token, body: 43 });
      assert.equal((await service.request('GET', '/endpoints/k.store-1/storage/counter', { token: account.token })).body.value, 43);
      const names = await service.request('GET', '/endpoints/k.store-1/storage', { token: account.token });
      assert.deepEqual(names.body.items.map((i: { name: string }) => i.name), ['config', 'counter', 'label']);

      assert.equal((await service.request('DELETE', '/endpoints/k.store-1/storage/config', { token: account.token })).status, 204);
      assert.equal((await service.request('GET', '/endpoints/k.store-1/storage/config', { token: account.token })).status, 404);
      assert.equal((await service.request('DELETE', '/endpoints/k.store-1/storage/config', { token: account.token })).status, 404);
    });

    it('deletes an endpoint with its storage and tags', async () => {
      const endpoint = await createEndpoint(service, account.token, { key: 'gone', serviceId, tags: ['doomed'] });
      await service.request('PUT', '/endpoints/k.gone/storage/x', { token: account.token, body: 1 });
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}`, { token: account.token })).status, 204);
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}`, { token: account.token })).status, 404);
      assert.equal((await service.request('GET', '/endpoint/count?tag=doomed', { token: account.token })).body.count, 0);
      // The key is free again, with no storage left behind.
      await createEndpoint(service, account.token, { key: 'gone', serviceId });
      assert.equal((await service.request('GET', '/endpoints/k.gone/storage/x', { token: account.token })).status, 404);
    });
  });
}
