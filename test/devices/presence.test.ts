import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** Event types of an endpoint's history, oldest first. */
async function historyTypes(service: TestService, token: string, endpointId: string): Promise<string[]> {
  const found = await service.request('GET', `/history?endpoint=${endpointId}&limit=50`, { token });
  assert.equal(found.status, 200, JSON.stringify(found.body));
  return (found.body.items as { type: string; time: string }[]).map((event) => event.type).reverse();
}

for (const dialect of DIALECTS) {
  describe(`device presence (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenantA: TestAccount;
    let tenantB: TestAccount;
    let mqttA: string;
    let mqttB: string;

    before(async () => {
      service = await startService(dialect.name);
      tenantA = await createAccount(service, 'tenant-a');
      tenantB = await createAccount(service, 'tenant-b');
      mqttA = await createService(service, tenantA.token, { name: 'mqtt', type: 'mqtt' });
      mqttB = await createService(service, tenantB.token, { name: 'mqtt', type: 'mqtt' });
    });
    after(() => service?.stop());

    it('a new endpoint is unavailable and never seen', async () => {
      const created = await createEndpoint(service, tenantA.token, { key: 'fresh', serviceId: mqttA });
      assert.equal(created.state, 'unavailable');
      assert.equal(created.lastSeenAt, null);
    });

    it('connect sets state, remoteAddr and emits on-connect; disconnect emits on-disconnect', async () => {
      const created = await createEndpoint(service, tenantA.token, { key: 'dev-1', serviceId: mqttA, statusDetails: { note: 'kept' } });
      const presence = service.bridge.presence;
      const [device] = await presence.findDevices('mqtt', 'dev-1');
      assert.ok(device);
      await presence.connected(device, { protocol: 'mqtt', remoteAddr: '127.0.0.1:50000' });

      const connected = await service.request('GET', `/endpoints/${created.id}`, { token: tenantA.token });
      assert.equal(connected.body.state, 'connected');
      assert.ok(Date.parse(connected.body.lastSeenAt) > 0);
      assert.deepEqual(connected.body.statusDetails, { note: 'kept', remoteAddr: '127.0.0.1:50000' });

      // A user's edit does not overwrite what the protocol recorded.
      await service.request('PATCH', `/endpoints/${created.id}`, { token: tenantA.token, body: { tags: ['edited'] } });
      const edited = await service.request('GET', `/endpoints/${created.id}`, { token: tenantA.token });
      assert.equal(edited.body.state, 'connected');

      await presence.disconnected({ ...device, lastSeenAt: connected.body.lastSeenAt }, 'mqtt', 'connection closed');
      const gone = await service.request('GET', `/endpoints/${created.id}`, { token: tenantA.token });
      assert.equal(gone.body.state, 'unavailable');
      assert.deepEqual(await historyTypes(service, tenantA.token, created.id), ['on-connect', 'on-disconnect']);
    });

    it('a device silent past secondsBeforeMissing becomes unavailable at the next sweep', async () => {
      const created = await createEndpoint(service, tenantA.token, { key: 'quiet', serviceId: mqttA, statusDetails: { secondsBeforeMissing: 1 } });
      const presence = service.bridge.presence;
      const [device] = await presence.findDevices('mqtt', 'quiet');
      assert.ok(device);
      await presence.seen(device);
      assert.equal(await presence.sweep(new Date(Date.now() + 500)), 0, 'not missing yet');
      assert.equal(await presence.sweep(new Date(Date.now() + 1500)), 1);
      const after = await service.request('GET', `/endpoints/${created.id}`, { token: tenantA.token });
      assert.equal(after.body.state, 'unavailable');
      assert.deepEqual(await historyTypes(service, tenantA.token, created.id), ['on-disconnect']);
    });

    describe('a connected device heard from again within a second', () => {
      const contact = { protocol: 'mqtt', remoteAddr: '127.0.0.1:50001' } as const;
      const read = async (id: string) => (await service.request('GET', `/endpoints/${id}`, { token: tenantA.token })).body;
      /** The device connected (written), then heard from again 200 ms later (waits): both endpoints as returned. */
      async function heardTwice(key: string, statusDetails: Record<string, unknown> = {}) {
        const created = await createEndpoint(service, tenantA.token, { key, serviceId: mqttA, statusDetails });
        const presence = service.bridge.presence;
        const [device] = await presence.findDevices('mqtt', key);
        assert.ok(device);
        const first = await presence.heard(device, contact);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const second = await presence.heard(first, contact);
        assert.ok(Date.parse(second.lastSeenAt!) > Date.parse(first.lastSeenAt!));
        return { id: created.id, first, second };
      }

      it('is written once, within the interval, with the newest time', async () => {
        const { id, first, second } = await heardTwice('chatty-1');
        assert.equal((await read(id)).lastSeenAt, first.lastSeenAt, 'the second time waits');
        await new Promise((resolve) => setTimeout(resolve, 1500));
        assert.equal((await read(id)).lastSeenAt, second.lastSeenAt, 'then it is written');
      });

      it('a sweep writes the newer deadline first: the device is not missing by the older one', async () => {
        const { id, second } = await heardTwice('chatty-2', { secondsBeforeMissing: 2 });
        // Past the first message's deadline, before the second's.
        assert.equal(await service.bridge.presence.sweep(new Date(Date.parse(second.lastSeenAt!) + 1900)), 0);
        assert.equal((await read(id)).state, 'connected');
        assert.equal((await read(id)).lastSeenAt, second.lastSeenAt);
      });

      it('going away or losing the address is written at once, and what waited does not undo it', async () => {
        const presence = service.bridge.presence;
        const gone = await heardTwice('chatty-3');
        await presence.disconnected(gone.second, 'mqtt', 'connection closed');
        const reused = await heardTwice('chatty-4');
        await presence.addressReused(reused.second);
        await presence.sweep();
        assert.equal((await read(gone.id)).state, 'unavailable');
        await assert.rejects(presence.addressOf(reused.second, ['mqtt']), (error: { code?: string }) => error.code === 'IOTB_DEVICE_ADDRESS_UNKNOWN');
      });
    });

    it('provisions an unknown device into the service account, with on-create', async () => {
      const presence = service.bridge.presence;
      const serviceB = await service.bridge.domain.services.get(await service.bridge.domain.accounts.platformScope(tenantB.accountId, 'test'), mqttB);
      const made = await presence.provision(serviceB, 'auto-1');
      assert.equal(made.accountId, tenantB.accountId);
      const listed = await service.request('GET', `/endpoints/k.auto-1`, { token: tenantB.token });
      assert.equal(listed.status, 200);
      assert.deepEqual(await historyTypes(service, tenantB.token, made.id), ['on-create']);
      // Tenant A sees neither the endpoint nor its events.
      assert.equal((await service.request('GET', `/endpoints/k.auto-1`, { token: tenantA.token })).status, 404);
      const history = await service.request('GET', `/history?endpoint=${made.id}`, { token: tenantA.token });
      assert.notEqual(history.status, 200);
    });

    it('findDevices looks only in services of the given protocol; a key belongs to the first account', async () => {
      await createEndpoint(service, tenantA.token, { key: 'shared-key', serviceId: mqttA });
      const taken = await service.request('POST', '/endpoints', { token: tenantB.token, body: { key: 'shared-key', serviceId: mqttB } });
      assert.equal(taken.status, 409);
      assert.equal(taken.body.error.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      const lwm2m = await createService(service, tenantA.token, { name: 'lwm2m', type: 'lwm2m' });
      await createEndpoint(service, tenantA.token, { key: 'shared-key', serviceId: lwm2m });
      const found = await service.bridge.presence.findDevices('mqtt', 'shared-key');
      assert.deepEqual(found.map((e) => e.accountId), [tenantA.accountId]);
      assert.equal((await service.bridge.presence.findDevices('lwm2m', 'shared-key')).length, 1);
    });
  });
}
