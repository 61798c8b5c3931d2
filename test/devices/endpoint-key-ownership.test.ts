import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, option, OptionNumber, uriQueryOptions } from '../../src/coap/index.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { eventsArrive, UdpDevice } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

// Security issue 14, finding 4: tenant B creating an endpoint with the key of tenant A's registered LwM2M
// device made A's next registration fail with 4.03 "used in several LwM2M services" (UDP: "ambiguous"), and
// the 4.03 texts told an unauthenticated peer whether a name existed.

for (const dialect of DIALECTS) {
  describe(`Endpoint keys on shared device ports belong to one account (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let lwm2mA: string;
    let lwm2mB: string;
    let raw: CoapEndpoint;
    let other: Database;
    const devices = new SimulatedDevices(() => service.ports.coap!);
    const register = async (name: string) => {
      const answer = await raw.request({ address: '127.0.0.1', port: service.ports.coap! }, { code: '0.02', options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions([`ep=${name}`, 'lt=60'])], payload: Buffer.from('</3/0>') });
      return { code: answer.code, text: answer.payload.toString('utf8') };
    };

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'keys-a');
      b = await createAccount(service, 'keys-b');
      lwm2mA = await createService(service, a.token, { name: 'fleet-a', type: 'lwm2m' });
      lwm2mB = await createService(service, b.token, { name: 'fleet-b', type: 'lwm2m' });
      raw = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
      await raw.start();
      other = openDatabase(service.bridge.config);
    });
    after(async () => {
      await devices.stopAll();
      await raw?.stop();
      await other?.close();
      await service?.stop();
    });

    it("another account cannot create, re-key or move an endpoint onto a key A's device of that protocol holds; A's device keeps registering", async () => {
      await createEndpoint(service, a.token, { key: 'urn:imei:350000000000001', serviceId: lwm2mA });
      const device = await devices.start('urn:imei:350000000000001');
      assert.equal(await device.register(), '2.01');

      const created = await service.request('POST', '/endpoints', { token: b.token, body: { key: 'urn:imei:350000000000001', serviceId: lwm2mB } });
      assert.equal(created.status, 409);
      assert.equal(created.body.error.code, 'IOTB_ENDPOINT_KEY_IN_USE');

      const own = await createEndpoint(service, b.token, { key: 'b-meter-1', serviceId: lwm2mB });
      const rekeyed = await service.request('PATCH', `/endpoints/${own.id}`, { token: b.token, body: { key: 'urn:imei:350000000000001' } });
      assert.equal(rekeyed.status, 409);
      assert.equal(rekeyed.body.error.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      const replaced = await service.request('PUT', `/endpoints/${own.id}`, { token: b.token, body: { key: 'urn:imei:350000000000001', serviceId: lwm2mB } });
      assert.equal(replaced.status, 409, JSON.stringify(replaced.body));

      // A key of another protocol is another device: B's MQTT service may use it.
      const mqttB = await createService(service, b.token, { name: 'mqtt-b', type: 'mqtt' });
      await createEndpoint(service, b.token, { key: 'urn:imei:350000000000001', serviceId: mqttB });
      const listed = await service.request('GET', '/endpoints?keyPrefix=urn:imei:350000000000001', { token: b.token });
      assert.deepEqual(listed.body.items.map((e: { serviceId: string }) => e.serviceId), [mqttB]);

      assert.equal(await device.register(), '2.01', "A's device still registers");
      const seen = await service.request('GET', '/endpoints/k.urn:imei:350000000000001', { token: a.token });
      assert.equal(seen.body.state, 'connected');
    });

    it('two accounts claiming one new key at the same moment: exactly one gets it', async () => {
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) => {
          const [token, serviceId] = i % 2 === 0 ? [a.token, lwm2mA] : [b.token, lwm2mB];
          return service.request('POST', '/endpoints', { token, body: { key: 'urn:imei:350000000000002', serviceId } });
        }),
      );
      const won = claims.filter((c) => c.status === 201);
      assert.equal(won.length, 1, claims.map((c) => `${c.status} ${c.body.error?.code ?? ''}`).join(', '));
      for (const lost of claims.filter((c) => c.status !== 201)) assert.ok(['IOTB_ENDPOINT_KEY_IN_USE', 'IOTB_ENDPOINT_KEY_TAKEN'].includes(lost.body.error.code), lost.body.error.code);
    });

    it('a clash left in older data: the account that used the key first keeps the device; the later one neither denies it nor receives it', async () => {
      await createEndpoint(service, a.token, { key: 'urn:imei:350000000000003', serviceId: lwm2mA });
      // Written as a version without the rule could have: B's endpoint with the same key, created later.
      const now = Date.now();
      await other.db
        .insertInto('endpoints')
        .values({ id: 'legacy-clash-b', account_id: b.accountId, service_id: lwm2mB, key: 'urn:imei:350000000000003', tags: '[]', status_details: '{}', parameters: '{}', trace: 0, created_at: now + 1000, updated_at: now + 1000 })
        .execute();
      const device = await devices.start('urn:imei:350000000000003');
      assert.equal(await device.register(), '2.01');
      assert.equal((await service.request('GET', '/endpoints/k.urn:imei:350000000000003', { token: a.token })).body.state, 'connected');
      assert.equal((await service.request('GET', '/endpoints/legacy-clash-b', { token: b.token })).body.state, 'unavailable');
    });

    it('refused registrations answer the same 4.03 text whether the name is unknown or held ambiguously', async () => {
      // A's own ambiguity: the same key in two of A's LwM2M services.
      const second = await createService(service, a.token, { name: 'fleet-a-2', type: 'lwm2m' });
      await createEndpoint(service, a.token, { key: 'twice-in-a', serviceId: lwm2mA });
      await createEndpoint(service, a.token, { key: 'twice-in-a', serviceId: second });
      const ambiguous = await register('twice-in-a');
      const unknown = await register('nobody-has-this-name');
      assert.equal(ambiguous.code, '4.03');
      assert.deepEqual(unknown, ambiguous);
    });

    it("a key parked in a service of another type cannot become a device key by changing the service's type", async () => {
      await createEndpoint(service, a.token, { key: 'urn:imei:350000000000009', serviceId: lwm2mA });
      const parking = await createService(service, b.token, { name: 'parking', type: 'http' });
      await createEndpoint(service, b.token, { key: 'urn:imei:350000000000009', serviceId: parking });
      const retyped = await service.request('PUT', `/services/${parking}`, { token: b.token, body: { name: 'parking', type: 'lwm2m' } });
      assert.equal(retyped.status, 409);
      assert.equal(retyped.body.error.code, 'IOTB_SERVICE_NOT_EMPTY');
      const empty = await createService(service, b.token, { name: 'empty', type: 'http' });
      assert.equal((await service.request('PUT', `/services/${empty}`, { token: b.token, body: { name: 'empty', type: 'lwm2m' } })).status, 200, 'an empty service may change type');
      const device = await devices.start('urn:imei:350000000000009');
      assert.equal(await device.register(), '2.01');
      assert.equal((await service.request('GET', '/endpoints/k.urn:imei:350000000000009', { token: a.token })).body.state, 'connected');
    });

    it('UDP: the same rule; A keeps receiving its device after B tried its key', async () => {
      const udpA = await createService(service, a.token, { name: 'udp-a', type: 'udp' });
      const udpB = await createService(service, b.token, { name: 'udp-b', type: 'udp' });
      const meter = await createEndpoint(service, a.token, { key: 'water-meter-77', serviceId: udpA });
      const refused = await service.request('POST', '/endpoints', { token: b.token, body: { key: 'water-meter-77', serviceId: udpB } });
      assert.equal(refused.body.error?.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      const udp = await UdpDevice.open(service.ports.udp!);
      try {
        await udp.send('water-meter-77:reading=42');
        const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, meter.id as string);
        assert.equal(event!.endpointId, meter.id);
      } finally {
        udp.close();
      }
    });
  });
}
