import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { CoapEndpoint, option, OptionNumber, uriQueryOptions } from '../../src/coap/index.js';
import { until } from '../helpers/devices.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

async function historyOf(service: TestService, token: string, endpointId: string): Promise<{ type: string; data: any }[]> {
  const found = await service.request('GET', `/history?endpoint=${endpointId}&limit=100`, { token });
  assert.equal(found.status, 200, JSON.stringify(found.body));
  return (found.body.items as { type: string; data: unknown }[]).reverse();
}

for (const dialect of DIALECTS) {
  describe(`LwM2M devices over CoAP (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const client = (endpointName: string, extra: Partial<SimulatedClientOptions> = {}) => devices.start(endpointName, extra);
    const operate = (ref: string, operation: string, body: Record<string, unknown>, token = tenant.token) =>
      service.request('POST', `/endpoints/${ref}/lwm2m/${operation}`, { token, body: { timeout: 3000, ...body } });

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'lwm2m-fleet');
      other = await createAccount(service, 'lwm2m-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('registers a known device: connected, lifetime and remoteAddr, on-connect with the objects', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-reg', serviceId });
      const device = await client('sim-reg', { lifetime: 120, lwm2mVersion: '1.1' });
      assert.equal(await device.register(), '2.01');
      const seen = await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token });
      assert.equal(seen.body.state, 'connected');
      assert.equal(seen.body.statusDetails.lifetime, 120);
      assert.match(seen.body.statusDetails.remoteAddr, /^127\.0\.0\.1:\d+$/);
      const [connect] = await historyOf(service, tenant.token, endpoint.id);
      assert.equal(connect?.type, 'on-connect');
      assert.deepEqual(connect?.data.objects, { 1: [0], 3: [0], 3303: [0] });
      assert.equal(connect?.data.lwm2mVersion, '1.1');

      const objects = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/objects`, { token: tenant.token });
      assert.equal(objects.body.registered, true);
      assert.deepEqual(
        objects.body.objects.map((o: { id: number; name: string }) => [o.id, o.name]),
        [[1, 'LwM2M Server'], [3, 'Device'], [3303, 'Temperature']],
      );
    });

    it('refuses an unknown endpoint name with 4.03 and a malformed registration with 4.00', async () => {
      const stranger = await client('nobody-knows-me');
      assert.equal(await stranger.register(), '4.03');
      const raw = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
      await raw.start();
      try {
        const noName = await raw.request({ address: '127.0.0.1', port: service.ports.coap! }, { code: '0.02', options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions(['lt=60'])] });
        assert.equal(noName.code, '4.00');
        const badLifetime = await raw.request({ address: '127.0.0.1', port: service.ports.coap! }, { code: '0.02', options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions(['ep=x', 'lt=-5'])] });
        assert.equal(badLifetime.code, '4.00');
      } finally {
        await raw.stop();
      }
    });

    it('auto-provisions unknown devices when the service says so, with on-create', async () => {
      const auto = await createAccount(service, 'lwm2m-auto');
      const autoService = await createService(service, auto.token, { name: 'auto', type: 'lwm2m', options: { autoProvision: true } });
      const device = await client('brand-new-device');
      assert.equal(await device.register(), '2.01');
      const made = await service.request('GET', '/endpoints/k.brand-new-device', { token: auto.token });
      assert.equal(made.status, 200);
      assert.equal(made.body.serviceId, autoService);
      assert.deepEqual((await historyOf(service, auto.token, made.body.id)).map((e) => e.type), ['on-create', 'on-connect']);
      // Not visible to another account.
      assert.equal((await service.request('GET', '/endpoints/k.brand-new-device', { token: other.token })).status, 404);
      await service.request('DELETE', `/services/${autoService}?cascade=true`, { token: auto.token });
    });

    it('reads the device in TLV, SenML JSON/CBOR, LwM2M JSON/CBOR and text, with lwm2m-data and last-known values', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-read', serviceId });
      const device = await client('sim-read', { lwm2mVersion: '1.1' });
      assert.equal(await device.register(), '2.01');
      for (const format of ['tlv', 'senml-json', 'senml-cbor', 'json', 'cbor']) {
        const read = await operate(endpoint.id, 'read', { path: '/3/0', format });
        assert.equal(read.status, 200, `${format}: ${JSON.stringify(read.body)}`);
        const values = Object.fromEntries(read.body.values.map((v: { path: string; value: unknown }) => [v.path, v.value]));
        assert.equal(values['/3/0/0'], 'IoT Bridge', format);
        assert.equal(values['/3/0/9'], 95, format);
        assert.equal(values['/3/0/7/1'], 5000, format);
      }
      const text = await operate(`k.sim-read`, 'read', { path: '/3303/0/5700', format: 'text' });
      assert.equal(text.status, 200, JSON.stringify(text.body));
      assert.deepEqual(text.body.values, [{ path: '/3303/0/5700', type: 'float', value: 21.5 }]);

      const data = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-data');
      assert.equal(data.length, 6);
      assert.deepEqual(data[5]?.data.objectIds, [3303]);
      assert.equal(data[5]?.data.token, text.body.token);
      assert.equal(typeof data[5]?.data.duration, 'number');
      assert.deepEqual(data[5]?.data.names, { '/3303/0/5700': 'Temperature/Sensor Value' }, 'translateIds: paths named from the object registry');

      const objects = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/objects`, { token: tenant.token });
      const lastKnown = Object.fromEntries(objects.body.lastKnown.map((v: { path: string; value: unknown }) => [v.path, v.value]));
      assert.equal(lastKnown['/3303/0/5700'], 21.5);
      assert.equal(lastKnown['/3/0/3'], '1.0.0');
    });

    it("a large read goes block-wise under the service's coapMaxMessageSize; lwm2m-data counts the exchanges", async () => {
      const small = await createService(service, tenant.token, { name: 'small', type: 'lwm2m', options: { coapMaxMessageSize: 64 } });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-big', serviceId: small });
      const long = 'x'.repeat(1000);
      const device = await client('sim-big', { values: [{ path: '/3/0/0', type: 'string', value: long }, { path: '/3/0/9', type: 'integer', value: 1 }] });
      assert.equal(await device.register(), '2.01');
      const read = await operate(endpoint.id, 'read', { path: '/3/0/0', format: 'text' });
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.values[0].value, long);
      const [data] = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-data');
      assert.ok(data?.data.requests > 1, `read in ${data?.data.requests} exchanges`);
      const one = await operate(endpoint.id, 'read', { path: '/3/0/9', format: 'text' });
      assert.equal(one.status, 200);
      const counts = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-data').map((e) => e.data.requests);
      assert.equal(counts[1], 1);
    });

    it('writes, executes, creates, deletes and discovers; device errors map to HTTP errors', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-write', serviceId });
      const device = await client('sim-write', { lwm2mVersion: '1.0' });
      assert.equal(await device.register(), '2.01');

      const write = await operate(endpoint.id, 'write', { path: '/3/0/14', value: '+02:00' });
      assert.equal(write.status, 200, JSON.stringify(write.body));
      assert.equal(device.values.get('/3/0/14')?.value, '+02:00');
      const partial = await operate(endpoint.id, 'write', { path: '/3303/0', partial: true, format: 'senml-json', values: { '/3303/0/5701': 'Far' } });
      assert.equal(partial.status, 200, JSON.stringify(partial.body));
      assert.equal(device.values.get('/3303/0/5701')?.value, 'Far');
      assert.equal(device.values.get('/3303/0/5700')?.value, 21.5, 'a partial update keeps the rest');

      assert.equal((await operate(endpoint.id, 'exec', { path: '/3/0/4', args: "0='now'" })).status, 200);
      assert.deepEqual(device.executed, [{ path: '/3/0/4', args: "0='now'" }]);

      const created = await operate(endpoint.id, 'create', { path: '/3303', values: { '/3303/1/5700': 18.25, '/3303/1/5701': 'Cel' } });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal(created.body.location, '/3303/1');
      assert.equal(device.values.get('/3303/1/5700')?.value, 18.25);
      assert.equal((await operate(endpoint.id, 'delete', { path: '/3303/1' })).status, 200);
      assert.equal(device.values.has('/3303/1/5700'), false);

      const discover = await operate(endpoint.id, 'discover', { path: '/3/0' });
      assert.equal(discover.status, 200, JSON.stringify(discover.body));
      assert.ok(discover.body.links.some((l: { target: string }) => l.target === '/3/0/9'));

      const missing = await operate(endpoint.id, 'read', { path: '/9999/0' });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'IOTB_LWM2M_DEVICE_NOT_FOUND');
      const notExecutable = await operate(endpoint.id, 'exec', { path: '/3/0/9' });
      assert.equal(notExecutable.status, 405);
      const badPath = await operate(endpoint.id, 'read', { path: '/3/x' });
      assert.equal(badPath.status, 400);
      assert.equal(badPath.body.error.code, 'IOTB_LWM2M_REQUEST_INVALID');
      const badValue = await operate(endpoint.id, 'write', { path: '/3/0/9', value: 'not a number' });
      assert.equal(badValue.status, 400);
    });

    it('reads and writes several objects in one request (Read-Composite, Write-Composite) with a 1.1 device', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-composite', serviceId });
      const device = await client('sim-composite', { lwm2mVersion: '1.1' });
      assert.equal(await device.register(), '2.01');
      for (const format of ['senml-cbor', 'senml-json']) {
        const read = await operate(endpoint.id, 'readComposite', { paths: ['/3/0/9', '/3303/0/5700'], format });
        assert.equal(read.status, 200, JSON.stringify(read.body));
        assert.deepEqual(read.body.values.map((v: { path: string; value: unknown }) => [v.path, v.value]), [['/3/0/9', 95], ['/3303/0/5700', 21.5]]);
      }
      const write = await operate(endpoint.id, 'writeMulti', { values: { '/3/0/14': '+05:00', '/3303/0/5701': 'K' } });
      assert.equal(write.status, 200, JSON.stringify(write.body));
      assert.deepEqual([device.values.get('/3/0/14')?.value, device.values.get('/3303/0/5701')?.value], ['+05:00', 'K']);
      assert.ok(device.received.includes('0.05 /') && device.received.includes('0.07 /'), 'FETCH and iPATCH on the root');
      const data = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-data');
      assert.deepEqual(data[0]?.data.objectIds, [3, 3303]);
      const old = await createEndpoint(service, tenant.token, { key: 'sim-composite-10', serviceId });
      const legacy = await client('sim-composite-10', { lwm2mVersion: '1.0' });
      assert.equal(await legacy.register(), '2.01');
      const refused = await operate(old.id, 'readComposite', { paths: ['/3/0/9'] });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, 'IOTB_LWM2M_REQUEST_INVALID');
    });

    it('answers 202 with a context and emits lwm2m-result', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-async', serviceId });
      const device = await client('sim-async');
      assert.equal(await device.register(), '2.01');
      const accepted = await operate(endpoint.id, 'read', { path: '/3/0/9', context: { job: 7 } });
      assert.equal(accepted.status, 202);
      const failed = await operate(endpoint.id, 'read', { path: '/77/0', context: 'second' });
      assert.equal(failed.status, 202);
      let results: { type: string; data: any }[] = [];
      await until(async () => {
        results = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-result');
        return results.length === 2;
      }, 'both lwm2m-result events');
      const byContext = new Map(results.map((r) => [JSON.stringify(r.data.context), r.data]));
      assert.equal(byContext.get('{"job":7}')?.success, true);
      assert.equal(byContext.get('{"job":7}')?.values[0].value, 95);
      assert.equal(byContext.get('"second"')?.success, false);
      assert.equal(byContext.get('"second"')?.error.code, 'IOTB_LWM2M_DEVICE_NOT_FOUND');
    });

    it('updates keep it registered; de-register makes it unavailable; requests then wait in the queue', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-life', serviceId });
      const device = await client('sim-life', { lifetime: 60 });
      assert.equal(await device.register(), '2.01');
      assert.equal(await device.update(['lt=90']), '2.04');
      const updated = await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token });
      assert.equal(updated.body.statusDetails.lifetime, 90);
      assert.equal(await device.deregister(), '2.02');
      const gone = await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token });
      assert.equal(gone.body.state, 'unavailable');
      const types = (await historyOf(service, tenant.token, endpoint.id)).map((e) => e.type);
      assert.deepEqual(types.slice(-1), ['on-disconnect']);
      // Unavailable: the request waits in the device queue and, the device staying away, times out.
      const waited = await operate(endpoint.id, 'read', { path: '/3/0', timeout: 300 });
      assert.equal(waited.status, 504);
      assert.equal(waited.body.error.code, 'IOTB_LWM2M_TIMEOUT');
      // It may register again.
      assert.equal(await device.register(), '2.01');
      assert.equal((await operate(endpoint.id, 'read', { path: '/3/0/9' })).status, 200);
    });

    it('a device registering from an address another device had takes it: the other one loses remoteAddr', async () => {
      const first = await createEndpoint(service, tenant.token, { key: 'addr-a', serviceId });
      await createEndpoint(service, tenant.token, { key: 'addr-b', serviceId });
      const a = await client('addr-a');
      assert.equal(await a.register(), '2.01');
      const port = a.coap.address().port;
      await a.stop();
      const b = await client('addr-b', { localPort: port });
      assert.equal(await b.register(), '2.01');
      await until(async () => (await service.request('GET', `/endpoints/${first.id}`, { token: tenant.token })).body.statusDetails.remoteAddr === undefined, "a's address given up");
      const objects = await service.request('GET', `/endpoints/${first.id}/lwm2m/objects`, { token: tenant.token });
      assert.equal(objects.body.registered, false, "a's registration ended with its address");
    });

    it('turns a 1.1 Send into lwm2m-data', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-send', serviceId });
      const device = await client('sim-send', { lwm2mVersion: '1.1' });
      assert.equal(await device.register(), '2.01');
      assert.equal(await device.send(['/3303/0/5700', '/3/0/9']), '2.04');
      const [data] = (await historyOf(service, tenant.token, endpoint.id)).filter((e) => e.type === 'lwm2m-data');
      assert.equal(data?.data.operation, 'send');
      assert.deepEqual(data?.data.objectIds.sort(), [3, 3303]);
    });

    it('another account can neither operate on nor inspect the device', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sim-private', serviceId });
      const device = await client('sim-private');
      assert.equal(await device.register(), '2.01');
      const before = device.received.length;
      for (const ref of [endpoint.id, 'k.sim-private']) {
        assert.equal((await operate(ref, 'read', { path: '/3/0' }, other.token)).status, 404);
        assert.equal((await operate(ref, 'write', { path: '/3/0/14', value: 'x' }, other.token)).status, 404);
        assert.equal((await service.request('GET', `/endpoints/${ref}/lwm2m/objects`, { token: other.token })).status, 404);
      }
      assert.equal(device.received.length, before, 'nothing reached the device');
    });
  });
}
