import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

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
