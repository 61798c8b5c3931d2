import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

type Result = { context: unknown; id: string; intermediate: boolean; success?: boolean; outcome?: string; proxy?: boolean; error?: { code: string }; values?: { value: unknown }[] };

for (const dialect of DIALECTS) {
  describe(`lwm2m.proxy_send and held requests (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const proxySend = (ref: string, body: Record<string, unknown>, token = tenant.token) => service.request('POST', `/endpoints/${ref}/lwm2m/proxy_send`, { token, body });
    const results = async (endpointId: string): Promise<Result[]> => {
      const found = await service.request('GET', `/history?endpoint=${endpointId}&type=lwm2m-result&limit=50`, { token: tenant.token });
      return (found.body.items as { type: string; data: Result }[]).filter((e) => e.type === 'lwm2m-result').reverse().map((e) => e.data);
    };
    const finalOf = (endpointId: string, id: string) => waitFor(async () => (await results(endpointId)).find((r) => r.id === id && !r.intermediate), `the final lwm2m-result of ${id}`);

    before(async () => {
      service = await startService(dialect.name, { scriptWallTimeoutMs: 4000 });
      tenant = await createAccount(service, 'proxy-send');
      other = await createAccount(service, 'proxy-send-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('holds a request for a device that is not registered and delivers it once it registers; listed meanwhile', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'proxy-1', serviceId });
      const accepted = await proxySend(endpoint.id, { operation: 'write', path: '/3/0/14', value: '+04:00', context: { job: 'tz' } });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.equal(accepted.body.queued, true);
      const id: string = accepted.body.id;
      const listed = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/queue`, { token: tenant.token });
      assert.equal(listed.status, 200);
      assert.equal(listed.body.waiting, 1);
      assert.deepEqual(listed.body.items.map((i: Record<string, unknown>) => [i.id, i.kind, i.operation, i.path, i.context]), [[id, 'proxy', 'write', '/3/0/14', { job: 'tz' }]]);
      const expiresIn = Date.parse(listed.body.items[0].expiresAt) - Date.parse(listed.body.items[0].createdAt);
      assert.equal(expiresIn, 14 * 86_400_000, 'the default TTL is 14 days');
      const [intermediate] = await results(endpoint.id);
      assert.deepEqual([intermediate?.id, intermediate?.intermediate, intermediate?.proxy], [id, true, true]);

      const device = await devices.start('proxy-1');
      assert.equal(await device.register(), '2.01');
      const final = await finalOf(endpoint.id, id);
      assert.deepEqual([final.success, final.outcome, final.context, final.proxy], [true, 'delivered', { job: 'tz' }, true]);
      assert.equal(device.values.get('/3/0/14')?.value, '+04:00');
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/queue`, { token: tenant.token })).body.items.length, 0);
    });

    it('a new registration purges asynchronous requests but not proxy_send ones', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'proxy-2', serviceId });
      const queued = await service.request('POST', `/endpoints/${endpoint.id}/lwm2m/read`, { token: tenant.token, body: { path: '/3/0/9', context: 'async' } });
      assert.equal(queued.status, 202);
      const proxied = await proxySend(endpoint.id, { operation: 'read', path: '/3/0/9', context: 'proxy' });
      assert.equal(proxied.status, 202);
      const device = await devices.start('proxy-2');
      assert.equal(await device.register(), '2.01');
      const purged = await finalOf(endpoint.id, queued.body.id);
      assert.deepEqual([purged.success, purged.outcome, purged.error?.code], [false, 'purged', 'IOTB_LWM2M_QUEUE_PURGED']);
      const delivered = await finalOf(endpoint.id, proxied.body.id);
      assert.deepEqual([delivered.success, delivered.outcome, delivered.values?.[0]?.value], [true, 'delivered', 95]);
      assert.deepEqual(device.received, ['0.01 /3/0/9'], 'only the proxy_send request reached the device');
    });

    it('a request past its ttl ends as expired; a withdrawn one as cancelled', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'proxy-3', serviceId });
      const short = await proxySend(endpoint.id, { operation: 'exec', path: '/3/0/4', ttl: 1000, context: 1 });
      const withdrawn = await proxySend(endpoint.id, { operation: 'exec', path: '/3/0/4', context: 2 });
      assert.equal(short.status, 202);
      const deleted = await service.request('DELETE', `/endpoints/${endpoint.id}/lwm2m/queue/${withdrawn.body.id}`, { token: tenant.token });
      assert.equal(deleted.status, 204);
      const again = await service.request('DELETE', `/endpoints/${endpoint.id}/lwm2m/queue/${withdrawn.body.id}`, { token: tenant.token });
      assert.equal(again.status, 404);
      assert.equal(again.body.error.code, 'IOTB_LWM2M_REQUEST_NOT_FOUND');
      const cancelled = await finalOf(endpoint.id, withdrawn.body.id);
      assert.deepEqual([cancelled.outcome, cancelled.error?.code, cancelled.context], ['cancelled', 'IOTB_LWM2M_CANCELLED', 2]);
      const expired = await finalOf(endpoint.id, short.body.id);
      assert.deepEqual([expired.success, expired.outcome, expired.error?.code, expired.context], [false, 'expired', 'IOTB_LWM2M_TIMEOUT', 1]);
      const device = await devices.start('proxy-3');
      assert.equal(await device.register(), '2.01');
      assert.deepEqual(device.executed, [], 'neither reached the device');
    });

    it('a script holds a request with lwm2m.proxy_send; bad arguments fail the call', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'proxy-4', serviceId });
      const result = await runScript(service, tenant.token, `var held = lwm2m.proxy_send(null, { operation: 'write', path: '/3/0/14', value: '+06:00' }, { context: { from: 'script' }, ttl: 60000 }); log(held.queued, typeof held.id);`, { endpoint: endpoint.id });
      assert.equal(result.status, 'success', `${result.error}`);
      assert.deepEqual(result.logs, ['true string']);
      for (const [call, message] of [
        [`lwm2m.proxy_send(null, { operation: 'observe', path: '/3/0/9' })`, /request.operation must be one of/],
        [`lwm2m.proxy_send(null, { operation: 'read', path: '/3/0/9' }, { ttl: 5 })`, /ttl is milliseconds/],
        [`lwm2m.proxy_send(null, { operation: 'read', path: '/x' })`, /IOTB_LWM2M_REQUEST_INVALID/],
        [`lwm2m.proxy_send(null, 'read')`, /request must be an object/],
      ] as const) {
        const failed = await runScript(service, tenant.token, call, { endpoint: endpoint.id });
        assert.equal(failed.status, 'failed', call);
        assert.match(String(failed.error), message, call);
      }
      const device = await devices.start('proxy-4');
      assert.equal(await device.register(), '2.01');
      const final = await waitFor(async () => (await results(endpoint.id)).find((r) => !r.intermediate), 'the delivered result');
      assert.deepEqual([final.outcome, final.context], ['delivered', { from: 'script' }]);
      assert.equal(device.values.get('/3/0/14')?.value, '+06:00');
    });

    it('bad bodies get 400; another account reaches neither the device nor its queue', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'proxy-5', serviceId });
      for (const body of [{ operation: 'observe', path: '/3/0/9' }, { operation: 'read', path: '/3/0/9', ttl: 10 }, { operation: 'read', path: 'nope' }, { path: '/3/0/9' }, { operation: 'read', path: '/3/0/9', extra: 1 }]) {
        const refused = await proxySend(endpoint.id, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.ok(refused.body.error.code, JSON.stringify(refused.body));
      }
      const mine = await proxySend(endpoint.id, { operation: 'read', path: '/3/0/9' });
      assert.equal(mine.status, 202);
      for (const ref of [endpoint.id, 'k.proxy-5']) {
        assert.equal((await proxySend(ref, { operation: 'read', path: '/3/0/9' }, other.token)).status, 404);
        assert.equal((await service.request('GET', `/endpoints/${ref}/lwm2m/queue`, { token: other.token })).status, 404);
        assert.equal((await service.request('DELETE', `/endpoints/${ref}/lwm2m/queue/${mine.body.id}`, { token: other.token })).status, 404);
      }
      const script = await runScript(service, other.token, `lwm2m.proxy_send('${endpoint.id}', { operation: 'read', path: '/3/0/9' });`, {});
      assert.equal(script.status, 'failed');
      assert.match(String(script.error), /IOTB_ENDPOINT_NOT_FOUND/);
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/queue`, { token: tenant.token })).body.items.length, 1, 'only its own request waits');
    });
  });
}
