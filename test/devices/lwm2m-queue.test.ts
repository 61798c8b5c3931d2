import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { waitFor } from '../helpers/devices.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** Devices in queue mode count as awake this long after they were heard from (short, for the test). */
const AWAKE_MS = 300;

for (const dialect of DIALECTS) {
  describe(`LwM2M queue mode (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const client = (endpointName: string, extra: Partial<SimulatedClientOptions> = {}) => devices.start(endpointName, extra);
    const operate = (ref: string, operation: string, body: Record<string, unknown>) =>
      service.request('POST', `/endpoints/${ref}/lwm2m/${operation}`, { token: tenant.token, body: { timeout: 3000, ...body } });
    const results = async (endpointId: string) => {
      const found = await service.request('GET', `/history?endpoint=${endpointId}&type=lwm2m-result&limit=50`, { token: tenant.token });
      return (found.body.items as { type: string; data: any }[]).filter((e) => e.type === 'lwm2m-result').reverse().map((e) => e.data);
    };

    before(async () => {
      service = await startService(dialect.name, { lwm2mAwakeMs: AWAKE_MS });
      tenant = await createAccount(service, 'queue-fleet');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('holds a request for a sleeping queue-mode device until its next update, then sends it', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'sleepy', serviceId });
      const device = await client('sleepy', { lwm2mVersion: '1.0', binding: 'UQ' });
      assert.equal(await device.register(), '2.01');
      const objects = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/objects`, { token: tenant.token });
      assert.equal(objects.body.registration.queueMode, true);
      // Right after registering it listens: a request goes at once.
      assert.equal((await operate(endpoint.id, 'read', { path: '/3/0/9' })).status, 200);
      await sleep(AWAKE_MS + 100);

      const accepted = await operate(endpoint.id, 'read', { path: '/3/0/9', context: 'while asleep' });
      assert.equal(accepted.status, 202);
      const pending = operate(endpoint.id, 'write', { path: '/3/0/14', value: '+03:00' }); // synchronous, waits
      await sleep(150);
      const before = device.received.length;
      assert.equal(before, 1, 'nothing sent while the device sleeps');
      const [queued] = await results(endpoint.id);
      assert.deepEqual([queued?.context, queued?.intermediate, queued?.queued], ['while asleep', true, true]);

      assert.equal(await device.update(), '2.04');
      const written = await pending;
      assert.equal(written.status, 200, JSON.stringify(written.body));
      assert.equal(device.values.get('/3/0/14')?.value, '+03:00');
      assert.deepEqual(device.received.slice(before), ['0.01 /3/0/9', '0.03 /3/0/14'], 'sent after the update, in order');
      const final = await waitFor(async () => (await results(endpoint.id)).find((r) => r.intermediate === false), 'the final result');
      assert.equal(final.success, true);
      assert.equal(final.values[0].value, 95);
    });

    it('directToQueue waits for the next update even when the device is reachable', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'awake', serviceId });
      const device = await client('awake');
      assert.equal(await device.register(), '2.01');
      const pending = operate(endpoint.id, 'exec', { path: '/3/0/4', directToQueue: true });
      await sleep(150);
      assert.deepEqual(device.executed, []);
      assert.equal(await device.update(), '2.04');
      assert.equal((await pending).status, 200);
      assert.deepEqual(device.executed, [{ path: '/3/0/4', args: '' }]);
    });

    it('a new registration purges the queue, and each purged request yields an lwm2m-result', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'purged', serviceId });
      const device = await client('purged');
      // Never registered yet (unavailable): requests wait.
      assert.equal((await operate(endpoint.id, 'read', { path: '/3/0/9', context: 1 })).status, 202);
      assert.equal((await operate(endpoint.id, 'read', { path: '/3/0/0', context: 2 })).status, 202);
      const waiting = await operate(endpoint.id, 'read', { path: '/3/0/9', timeout: 300 });
      assert.equal(waiting.status, 504, 'a synchronous request gives up after its timeout');

      assert.equal(await device.register(), '2.01');
      const purged = await waitFor(async () => {
        const finals = (await results(endpoint.id)).filter((r) => r.intermediate === false);
        return finals.length === 2 ? finals : undefined;
      }, 'both purged results');
      assert.deepEqual(purged.map((r) => [r.context, r.success, r.error.code]), [[1, false, 'IOTB_LWM2M_QUEUE_PURGED'], [2, false, 'IOTB_LWM2M_QUEUE_PURGED']]);
      assert.deepEqual(device.received, [], 'nothing purged reached the device');
    });

    it('a CoAP ping wakes a sleeping device and does what the service\'s keep-alive mode says', async () => {
      // Waits for the mode's whole effect (the details write, the touch and the event land one after another).
      type Outcome = { after: { lastSeenAt: string; statusDetails: Record<string, string> }; keepAliveEvents: number };
      const seenAfter = async (mode: string, done: (outcome: Outcome, registeredAt: string) => boolean) => {
        const modeService = await createService(service, tenant.token, { name: `ka-${mode}`, type: 'lwm2m', options: { keepAliveMode: mode } });
        const endpoint = await createEndpoint(service, tenant.token, { key: `ka-${mode}`, serviceId: modeService });
        const device = await client(`ka-${mode}`, { binding: 'UQ', lwm2mVersion: '1.0' });
        assert.equal(await device.register(), '2.01');
        const registered = (await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token })).body;
        await sleep(AWAKE_MS + 50);
        const pending = operate(endpoint.id, 'read', { path: '/3/0/9' });
        await sleep(100);
        device.ping();
        assert.equal((await pending).status, 200, 'the ping woke the queue');
        const outcome = await waitFor(async () => {
          const after = (await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token })).body;
          const events = await service.request('GET', `/history?endpoint=${endpoint.id}&type=coap-keepalive`, { token: tenant.token });
          const found = { after, keepAliveEvents: (events.body.items as { type: string }[]).filter((e) => e.type === 'coap-keepalive').length };
          return done(found, registered.lastSeenAt) ? found : undefined;
        }, `the effect of keep-alive mode ${mode}`);
        return { registered, ...outcome };
      };
      const nothing = await seenAfter('do-nothing', () => true);
      assert.equal(nothing.after.statusDetails.dateLastKeepAlive, undefined);
      const detail = await seenAfter('statusDetail', (o) => o.after.statusDetails.dateLastKeepAlive !== undefined);
      assert.ok(Date.parse(detail.after.statusDetails.dateLastKeepAlive) > 0);
      assert.equal(detail.after.lastSeenAt, detail.registered.lastSeenAt, 'statusDetail does not touch');
      assert.equal(detail.keepAliveEvents, 0);
      const touch = await seenAfter('touch', (o, registeredAt) => Date.parse(o.after.lastSeenAt) > Date.parse(registeredAt));
      assert.ok(Date.parse(touch.after.lastSeenAt) > Date.parse(touch.registered.lastSeenAt), 'touch keeps it connected');
      const event = await seenAfter('event', (o) => o.keepAliveEvents > 0);
      assert.equal(event.keepAliveEvents, 1);
    });

    it('"Force Queue Mode" makes every device of the service a queue-mode device, at every update', async () => {
      const forced = await createService(service, tenant.token, { name: 'forced', type: 'lwm2m', options: { forceQueueMode: true } });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'forced-1', serviceId: forced });
      const device = await client('forced-1', { binding: 'U' });
      assert.equal(await device.register(), '2.01');
      assert.equal(await device.update(['b=U']), '2.04');
      const objects = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/objects`, { token: tenant.token });
      assert.equal(objects.body.registration.queueMode, true);
    });
  });
}
