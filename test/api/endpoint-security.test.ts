import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';
import { DeviceSecurity, type DeviceSecurityStore } from '../../src/domain/device-security.js';
import { openDatabase } from '../../src/store/database.js';
import { SqlDeviceSecurityStore } from '../../src/store/device-security-store.js';

const KEY_HEX = '000102030405060708090a0b0c0d0e0f';

for (const dialect of DIALECTS) {
  describe(`PUT | GET | DELETE /endpoints/{ref}/security (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    let otherServiceId: string;
    const put = (ref: string, body: unknown, token = tenant.token) => service.request('PUT', `/endpoints/${ref}/security`, { token, body });

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'security');
      other = await createAccount(service, 'security-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
      otherServiceId = await createService(service, other.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => service?.stop());

    it('stores a PSK (hex or base64) and never shows the key; x509 replaces it; DELETE removes it', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sec-1', serviceId });
      const saved = await put('k.sec-1', { mode: 'psk', identity: 'sec-1', key: KEY_HEX });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      assert.deepEqual([saved.body.mode, saved.body.identity, saved.body.keySet, saved.body.key], ['psk', 'sec-1', true, undefined]);
      const read = await service.request('GET', `/endpoints/${endpoint.id}/security`, { token: tenant.token });
      assert.deepEqual([read.body.mode, read.body.identity, read.body.keySet], ['psk', 'sec-1', true]);
      assert.ok(!JSON.stringify(read.body).includes(KEY_HEX));
      assert.equal((await put(endpoint.id, { mode: 'psk', identity: 'sec-1', key: Buffer.from(KEY_HEX, 'hex').toString('base64') })).status, 200);
      const looked = await service.bridge.domain.security.pskFor('sec-1');
      assert.equal(looked?.key.toString('hex'), KEY_HEX);
      assert.equal(looked?.endpointId, endpoint.id);
      const x509 = await put(endpoint.id, { mode: 'x509' });
      assert.deepEqual([x509.status, x509.body.mode, x509.body.identity], [200, 'x509', undefined]);
      assert.equal(await service.bridge.domain.security.pskFor('sec-1'), undefined, 'the identity is free again');
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}/security`, { token: tenant.token })).status, 204);
      const gone = await service.request('GET', `/endpoints/${endpoint.id}/security`, { token: tenant.token });
      assert.deepEqual([gone.status, gone.body.error.code], [404, 'IOTB_SECURITY_NOT_FOUND']);
    });

    it('what the protocol servers read (of): once per endpoint, every change seen at once, no read a change overtook kept', async () => {
      const endpoint = { id: (await createEndpoint(service, tenant.token, { key: 'sec-of', serviceId })).id as string };
      const scope = await service.bridge.domain.accounts.platformScope(tenant.accountId, 'test');
      const database = openDatabase(service.bridge.config);
      try {
        // The real store, its reads counted; the next read can be held after it read, until released.
        const real = new SqlDeviceSecurityStore(database.db);
        let reads = 0;
        let holdNext: Promise<void> | undefined;
        const store = new Proxy(real, {
          get(target, name) {
            if (name === 'get') {
              return async (endpointId: string) => {
                reads++;
                const hold = holdNext;
                holdNext = undefined;
                const found = await target.get(endpointId);
                await hold;
                return found;
              };
            }
            const value: unknown = Reflect.get(target, name);
            return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
          },
        }) as DeviceSecurityStore;
        const security = new DeviceSecurity(store, service.bridge.domain.endpoints);

        for (let i = 0; i < 3; i++) assert.equal(await security.of(endpoint), undefined);
        assert.equal(reads, 1, 'one read for three look-ups');
        await security.put(scope, endpoint.id, { mode: 'x509' });
        assert.equal((await security.of(endpoint))?.mode, 'x509', 'a change is seen at once');
        const afterPut = reads;
        assert.equal((await security.of(endpoint))?.mode, 'x509');
        assert.equal(reads, afterPut, 'and read once');

        // A read that started before a removal and answers after it must not be kept as the current value.
        await security.put(scope, endpoint.id, { mode: 'psk', identity: 'sec-of', key: KEY_HEX });
        let release!: () => void;
        holdNext = new Promise<void>((resolve) => (release = resolve));
        const overtaken = security.of(endpoint);
        await new Promise((resolve) => setTimeout(resolve, 50));
        await security.remove(scope, endpoint.id);
        release();
        assert.equal((await overtaken)?.mode, 'psk', 'the overtaken read answers what it read');
        assert.equal(await security.of(endpoint), undefined, 'but is not kept');
      } finally {
        await database.close();
      }
    });

    it('bad bodies get 400; an identity of another endpoint (any account) 409; another account 404', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sec-2', serviceId });
      for (const body of [
        { mode: 'psk', identity: 'sec-2', key: '0001' },
        { mode: 'psk', identity: 'sec-2', key: 'not hex, not base64!' },
        { mode: 'psk', identity: '', key: KEY_HEX },
        { mode: 'psk', identity: 'x'.repeat(129), key: KEY_HEX },
        { mode: 'psk', identity: 'sec-2' },
        { mode: 'rot13' },
        { mode: 'x509', key: KEY_HEX },
      ]) {
        const refused = await put(endpoint.id, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.equal(refused.body.error.code, 'IOTB_REQUEST_VALIDATION');
      }
      assert.equal((await put(endpoint.id, { mode: 'psk', identity: 'sec-2', key: KEY_HEX })).status, 200);
      const theirs = await createEndpoint(service, other.token, { key: 'their-sec', serviceId: otherServiceId });
      const taken = await put(theirs.id, { mode: 'psk', identity: 'sec-2', key: KEY_HEX }, other.token);
      assert.deepEqual([taken.status, taken.body.error.code], [409, 'IOTB_PSK_IDENTITY_IN_USE']);
      for (const ref of [endpoint.id, 'k.sec-2']) {
        assert.equal((await put(ref, { mode: 'x509' }, other.token)).status, 404);
        assert.equal((await service.request('GET', `/endpoints/${ref}/security`, { token: other.token })).status, 404);
        assert.equal((await service.request('DELETE', `/endpoints/${ref}/security`, { token: other.token })).status, 404);
      }
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}/security`, { token: tenant.token })).body.mode, 'psk', 'untouched');
    });
  });
}
