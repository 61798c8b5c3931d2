import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { until } from '../helpers/devices.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface HistoryEvent {
  type: string;
  data: any;
}

for (const dialect of DIALECTS) {
  describe(`LwM2M observe / cancel-observe (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const client = async (endpointName: string, lwm2mVersion: '1.0' | '1.1' = '1.1') => {
      const made = await devices.start(endpointName, { lwm2mVersion });
      assert.equal(await made.register(), '2.01');
      return made;
    };
    const operate = (ref: string, operation: string, body: Record<string, unknown>, token = tenant.token) =>
      service.request('POST', `/endpoints/${ref}/lwm2m/${operation}`, { token, body: { timeout: 3000, ...body } });
    const observeData = async (endpointId: string): Promise<HistoryEvent[]> => {
      const found = await service.request('GET', `/history?endpoint=${endpointId}&limit=100`, { token: tenant.token });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      return (found.body.items as HistoryEvent[]).reverse().filter((e) => e.type === 'lwm2m-data' && e.data.operation === 'observe');
    };
    const objects = async (ref: string) => (await service.request('GET', `/endpoints/${ref}/lwm2m/objects`, { token: tenant.token })).body;

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'lwm2m-observe');
      other = await createAccount(service, 'lwm2m-observe-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('Observe-Composite watches several paths of several objects in one observation (1.1)', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-composite', serviceId });
      const device = await client('obs-composite');
      const observed = await operate(endpoint.id, 'observeComposite', { paths: ['/3/0/9', '/3303/0/5700'] });
      assert.equal(observed.status, 200, JSON.stringify(observed.body));
      assert.equal(observed.body.observing, true);
      assert.deepEqual(observed.body.values.map((v: { path: string }) => v.path), ['/3/0/9', '/3303/0/5700']);
      assert.equal(await device.changeValue('/3303/0/5700', 30.5), 1);
      assert.equal(await device.changeValue('/3/0/9', 42), 1);
      assert.equal(await device.changeValue('/3/0/14', '+00:00'), 0, 'a path outside the composite notifies nobody');
      let data: HistoryEvent[] = [];
      await until(async () => (data = await observeData(endpoint.id)).length === 3, 'three notifications');
      const last = Object.fromEntries(data[2]!.data.values.map((v: { path: string; value: unknown }) => [v.path, v.value]));
      assert.deepEqual(last, { '/3/0/9': 42, '/3303/0/5700': 30.5 });
      assert.equal(data[2]!.data.token, observed.body.token);
      const cancelled = await operate(endpoint.id, 'cancelObserve', { path: '/' });
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.equal(await device.changeValue('/3/0/9', 41), 0);
    });

    it('several composite observations of one device at once, each with its token; cancelled by paths or token', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-composite-many', serviceId });
      const device = await client('obs-composite-many');
      const first = await operate(endpoint.id, 'observeComposite', { paths: ['/3/0/9', '/3303/0/5700'] });
      const second = await operate(endpoint.id, 'observeComposite', { paths: ['/3/0/14', '/3/0/9'] });
      assert.equal(first.body.observing, true, JSON.stringify(first.body));
      assert.equal(second.body.observing, true, JSON.stringify(second.body));
      assert.notEqual(first.body.token, second.body.token);
      // The same paths in another order are the same observation: it replaces the first.
      const again = await operate(endpoint.id, 'observeComposite', { paths: ['/3303/0/5700', '/3/0/9', '/3/0/9'] });
      const listed = (await objects(endpoint.id)).observations as { path: string; paths: string[]; token: string }[];
      assert.deepEqual(listed.map((o) => [o.path, o.paths, o.token]).sort(), [
        ['/', ['/3/0/14', '/3/0/9'], second.body.token],
        ['/', ['/3303/0/5700', '/3/0/9', '/3/0/9'], again.body.token],
      ].sort());
      // The replaced observation is cancelled reactively (RFC 7641 3.6): the device may still notify it once, and is answered RST.
      assert.ok((await device.changeValue('/3/0/9', 17)) >= 2, 'both observations watch /3/0/9');
      await until(async () => (await observeData(endpoint.id)).filter((e) => e.data.values.some((v: { value: unknown }) => v.value === 17)).length === 2, 'one notification per observation');
      const tokens = (await observeData(endpoint.id)).filter((e) => e.data.values.some((v: { value: unknown }) => v.value === 17)).map((e) => e.data.token).sort();
      assert.deepEqual(tokens, [second.body.token, again.body.token].sort());

      const ambiguous = await operate(endpoint.id, 'cancelObserve', { path: '/' });
      assert.equal(ambiguous.status, 400, JSON.stringify(ambiguous.body));
      assert.match(ambiguous.body.error.message, /several composite observations/);
      const byPaths = await operate(endpoint.id, 'cancelObserve', { paths: ['/3/0/9', '/3/0/14'] });
      assert.equal(byPaths.status, 200, JSON.stringify(byPaths.body));
      assert.equal(byPaths.body.token, second.body.token);
      const byToken = await operate(endpoint.id, 'cancelObserve', { token: again.body.token });
      assert.equal(byToken.status, 200, JSON.stringify(byToken.body));
      await device.changeValue('/3/0/9', 18);
      await device.changeValue('/3/0/9', 19);
      assert.equal(await device.changeValue('/3/0/9', 20), 0, 'nobody observes any more (each was answered RST)');
      const unknown = await operate(endpoint.id, 'cancelObserve', { token: 'abcdef01' });
      assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
      const badToken = await operate(endpoint.id, 'cancelObserve', { token: 'not-hex' });
      assert.equal(badToken.status, 400, JSON.stringify(badToken.body));
    });

    it('observe answers like a read; notifications become lwm2m-data with the same token; cancel stops them', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-temp', serviceId });
      const device = await client('obs-temp');

      const observed = await operate(endpoint.id, 'observe', { path: '/3303/0/5700' });
      assert.equal(observed.status, 200, JSON.stringify(observed.body));
      assert.equal(observed.body.observing, true);
      assert.deepEqual(observed.body.values, [{ path: '/3303/0/5700', type: 'float', value: 21.5 }]);
      const token: string = observed.body.token;
      assert.match(token, /^[0-9a-f]+$/);
      assert.deepEqual(
        (await objects(endpoint.id)).observations.map((o: { path: string; token: string; since: string }) => [o.path, o.token, typeof o.since]),
        [['/3303/0/5700', token, 'string']],
      );

      assert.equal(await device.changeValue('/3303/0/5700', 23.75), 1);
      assert.equal(await device.changeValue('/3303/0/5700', 24.5), 1);
      assert.equal(await device.changeValue('/3/0/9', 80), 0, 'an unobserved path notifies nobody');
      let data: HistoryEvent[] = [];
      await until(async () => (data = await observeData(endpoint.id)).length === 3, 'three notifications');
      assert.ok(data.every((e) => e.data.token === token && e.data.path === '/3303/0/5700'));
      assert.deepEqual(data.map((e) => e.data.values[0].value), [21.5, 23.75, 24.5]);
      assert.deepEqual(data[1]?.data.objectIds, [3303]);
      const lastKnown = Object.fromEntries((await objects(endpoint.id)).lastKnown.map((v: { path: string; value: unknown }) => [v.path, v.value]));
      assert.equal(lastKnown['/3303/0/5700'], 24.5);

      const cancelled = await operate(endpoint.id, 'cancelObserve', { path: '/3303/0/5700' });
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.equal(cancelled.body.token, token);
      assert.equal(cancelled.body.code, '2.05', 'the device answered the deregistering GET');
      assert.deepEqual((await objects(endpoint.id)).observations, []);
      assert.equal(await device.changeValue('/3303/0/5700', 30), 0, 'the device no longer has the observer');
      await sleep(200);
      assert.equal((await observeData(endpoint.id)).length, 3);

      const again = await operate(endpoint.id, 'cancelObserve', { path: '/3303/0/5700' });
      assert.equal(again.status, 404);
      assert.equal(again.body.error.code, 'IOTB_LWM2M_NOT_OBSERVED');
    });

    it('observes an instance (TLV for 1.0): a change of one of its resources notifies the instance', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-instance', serviceId });
      const device = await client('obs-instance', '1.0');
      const observed = await operate(`k.obs-instance`, 'observe', { path: '/3303/0' });
      assert.equal(observed.status, 200, JSON.stringify(observed.body));
      assert.equal(observed.body.values.length, 2);
      assert.equal(await device.changeValue('/3303/0/5701', 'Far'), 1);
      let data: HistoryEvent[] = [];
      await until(async () => (data = await observeData(endpoint.id)).length === 2, 'two notifications');
      assert.equal(data[1]?.data.token, observed.body.token);
      assert.equal(data[1]?.data.format, 'tlv');
      assert.deepEqual(Object.fromEntries(data[1]?.data.values.map((v: { path: string; value: unknown }) => [v.path, v.value])), { '/3303/0/5700': 21.5, '/3303/0/5701': 'Far' });
      // Observing the same path again replaces the observation.
      const renewed = await operate(endpoint.id, 'observe', { path: '/3303/0' });
      assert.equal(renewed.status, 200);
      assert.deepEqual((await objects(endpoint.id)).observations.map((o: { token: string }) => o.token), [renewed.body.token]);
      // A path the device does not have: its error, no observation.
      const missing = await operate(endpoint.id, 'observe', { path: '/3304/0' });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'IOTB_LWM2M_DEVICE_NOT_FOUND');
      assert.equal((await objects(endpoint.id)).observations.length, 1);
    });

    it('a new registration drops the observations; their notifications are refused', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-rereg', serviceId });
      const device = await client('obs-rereg');
      assert.equal((await operate(endpoint.id, 'observe', { path: '/3/0/9' })).status, 200);
      assert.equal((await objects(endpoint.id)).observations.length, 1);
      assert.equal(await device.register(), '2.01');
      assert.deepEqual((await objects(endpoint.id)).observations, []);
      // The device still believes it is observed: its notification gets RST and nothing is emitted.
      await device.changeValue('/3/0/9', 42);
      await until(() => device.coap.observers().length === 0, 'the observation cancelled on the device');
      await sleep(200);
      assert.equal((await observeData(endpoint.id)).length, 1, 'only the first answer');
      assert.equal((await operate(endpoint.id, 'cancelObserve', { path: '/3/0/9' })).status, 404);

      // De-registration ends them too.
      assert.equal((await operate(endpoint.id, 'observe', { path: '/3/0/9' })).status, 200);
      assert.equal(await device.deregister(), '2.02');
      assert.deepEqual((await objects(endpoint.id)).observations, []);
    });

    it('another account cannot observe the device', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'obs-private', serviceId });
      const device = await client('obs-private');
      const before = device.received.length;
      for (const ref of [endpoint.id, 'k.obs-private']) {
        assert.equal((await operate(ref, 'observe', { path: '/3/0/9' }, other.token)).status, 404);
        assert.equal((await operate(ref, 'cancelObserve', { path: '/3/0/9' }, other.token)).status, 404);
      }
      assert.equal(device.received.length, before, 'nothing reached the device');
      assert.equal(device.coap.observers().length, 0);
    });
  });
}
