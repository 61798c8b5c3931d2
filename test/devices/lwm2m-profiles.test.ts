import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CLIENT_PROFILES, type ClientProfile, type SimulatedClient } from '../../tools/lwm2m-client.js';
import { until } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { startService, type TestService } from '../helpers/service.js';

interface HistoryEvent {
  type: string;
  data: { operation: string; path: string; format: string; token: string; values: { path: string; value: unknown }[] };
}

/**
 * Content-format negotiation (issue "LwM2M in production"): every device management operation, observe
 * and composite operation against the simulator as each client profile seen in the field — what it
 * announces in its root link's `ct` and what it takes (others: 4.06 / 4.15).
 */
describe('LwM2M client profiles: the service speaks the formats each device takes', () => {
  let service: TestService;
  let tenant: TestAccount;
  let serviceId: string;
  const devices = new SimulatedDevices(() => service.ports.coap!);

  before(async () => {
    service = await startService('sqlite');
    tenant = await createAccount(service, 'lwm2m-profiles');
    serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
  });
  after(async () => {
    await devices.stopAll();
    await service?.stop();
  });

  const operate = (ref: string, operation: string, body: Record<string, unknown>) =>
    service.request('POST', `/endpoints/${ref}/lwm2m/${operation}`, { token: tenant.token, body: { timeout: 3000, ...body } });
  const ok = async (ref: string, operation: string, body: Record<string, unknown>) => {
    const answer = await operate(ref, operation, body);
    assert.equal(answer.status, 200, `${operation} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  const dataEvents = async (endpointId: string): Promise<HistoryEvent[]> => {
    const found = await service.request('GET', `/history?endpoint=${endpointId}&limit=100`, { token: tenant.token });
    return (found.body.items as HistoryEvent[]).reverse().filter((e) => e.type === 'lwm2m-data');
  };
  const valuesOf = (body: { values: { path: string; value: unknown }[] }) => Object.fromEntries(body.values.map((v) => [v.path, v.value]));
  /** Requests the device received since `from`, as `0.01 /3/0`. */
  const since = (device: SimulatedClient, from: number) => device.received.slice(from);

  for (const [profile, settings] of Object.entries(CLIENT_PROFILES) as [ClientProfile, (typeof CLIENT_PROFILES)[ClientProfile]][]) {
    it(`${profile}: read, write, create, delete, discover, exec, observe${settings.lwm2mVersion === '1.0' ? '' : ', composite'}`, async () => {
      const key = `profile-${profile}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId });
      const device = await devices.start(key, { ...settings });
      assert.equal(await device.register(), '2.01');

      const first = device.received.length;
      const instance = await ok(endpoint.id, 'read', { path: '/3/0' });
      assert.equal(valuesOf(instance)['/3/0/9'], 95);
      assert.equal(valuesOf(instance)['/3/0/7/1'], 5000);
      const tries = since(device, first).length;
      // A device that announced its formats is asked in one of them at once; one that announced none may
      // refuse the first guess (4.06) and is asked once more; what worked is used from then on.
      assert.ok(tries === 1 || (tries === 2 && !('announce' in settings)), `${profile}: ${tries} GETs for the first read`);
      const again = device.received.length;
      await ok(endpoint.id, 'read', { path: '/3303/0' });
      assert.equal(since(device, again).length, 1, `${profile}: the format that worked is remembered`);

      assert.equal(valuesOf(await ok(endpoint.id, 'read', { path: '/3/0/9' }))['/3/0/9'], 95);
      await ok(endpoint.id, 'write', { path: '/3/0/14', value: '+02:00' });
      assert.equal(device.values.get('/3/0/14')?.value, '+02:00');
      await ok(endpoint.id, 'write', { path: '/3303/0', partial: true, values: { '/3303/0/5701': 'Far' } });
      assert.equal(device.values.get('/3303/0/5701')?.value, 'Far');
      const created = await ok(endpoint.id, 'create', { path: '/3303', values: { '/3303/1/5700': 18.25, '/3303/1/5701': 'Cel' } });
      assert.equal(created.location, '/3303/1');
      await ok(endpoint.id, 'delete', { path: '/3303/1' });
      assert.ok((await ok(endpoint.id, 'discover', { path: '/3/0' })).links.length > 1);
      await ok(endpoint.id, 'exec', { path: '/3/0/4' });

      const observed = await ok(endpoint.id, 'observe', { path: '/3303/0/5700' });
      assert.equal(observed.observing, true);
      assert.equal(await device.changeValue('/3303/0/5700', 30.5), 1);
      await until(async () => (await dataEvents(endpoint.id)).some((e) => e.data.operation === 'observe' && e.data.token === observed.token && valuesOf(e.data)['/3303/0/5700'] === 30.5), 'the notification');
      await ok(endpoint.id, 'cancelObserve', { path: '/3303/0/5700' });

      if (settings.lwm2mVersion !== '1.0') {
        const composite = await ok(endpoint.id, 'readComposite', { paths: ['/3/0/9', '/3303/0/5700'] });
        assert.deepEqual(valuesOf(composite), { '/3/0/9': 95, '/3303/0/5700': 30.5 });
        await ok(endpoint.id, 'writeMulti', { values: { '/3/0/14': '+05:00', '/3303/0/5701': 'K' } });
        assert.equal(device.values.get('/3303/0/5701')?.value, 'K');
        const watching = await ok(endpoint.id, 'observeComposite', { paths: ['/3/0/9', '/3303/0/5700'] });
        assert.equal(watching.observing, true);
        assert.equal(await device.changeValue('/3/0/9', 42), 1);
        await until(async () => (await dataEvents(endpoint.id)).some((e) => e.data.token === watching.token && valuesOf(e.data)['/3/0/9'] === 42), 'the composite notification');
        await ok(endpoint.id, 'cancelObserve', { path: '/' });
      }

      // What the device answered in: one of the formats it takes (or text/opaque for a single value).
      const taken = new Set(['text', 'opaque', ...settings.formats.map(String)]);
      const names: Record<string, string> = { tlv: '11542', 'senml-json': '110', 'senml-cbor': '112', cbor: '11544', json: '11543', text: 'text', opaque: 'opaque' };
      for (const event of await dataEvents(endpoint.id)) assert.ok(taken.has(names[event.data.format] ?? event.data.format), `${profile}: answered in ${event.data.format}`);
    });
  }

  it('announced formats are what the device is asked in: ct=110 gets SenML JSON, ct=112 SenML CBOR, 1.0 TLV', async () => {
    const expected: [ClientProfile, string][] = [
      ['1.1-ct110', 'senml-json'],
      ['1.1-ct112', 'senml-cbor'],
      ['1.0-tlv', 'tlv'],
    ];
    for (const [profile, format] of expected) {
      const key = `asked-${profile}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId });
      const device = await devices.start(key, { ...CLIENT_PROFILES[profile] });
      assert.equal(await device.register(), '2.01');
      await ok(endpoint.id, 'read', { path: '/3/0' });
      const [event] = await dataEvents(endpoint.id);
      assert.equal(event?.data.format, format, profile);
    }
  });

  it('the service option preferredFormat wins over what the device announced; an endpoint parameter over the service', async () => {
    const preferring = await createService(service, tenant.token, { name: 'lwm2m-tlv', type: 'lwm2m', options: { preferredFormat: 'tlv' } });
    const viaService = await createEndpoint(service, tenant.token, { key: 'prefers-service', serviceId: preferring });
    const viaEndpoint = await createEndpoint(service, tenant.token, { key: 'prefers-endpoint', serviceId: preferring, parameters: { preferredFormat: 'senml-json' } });
    for (const key of ['prefers-service', 'prefers-endpoint']) {
      const device = await devices.start(key, { ...CLIENT_PROFILES['1.1-ct112'] });
      assert.equal(await device.register(), '2.01');
    }
    await ok(viaService.id, 'read', { path: '/3/0' });
    await ok(viaEndpoint.id, 'read', { path: '/3/0' });
    assert.equal((await dataEvents(viaService.id))[0]?.data.format, 'tlv');
    assert.equal((await dataEvents(viaEndpoint.id))[0]?.data.format, 'senml-json');
    const bad = await service.request('POST', '/services', { token: tenant.token, body: { name: 'bad', type: 'lwm2m', options: { preferredFormat: 'xml' } } });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
  });

  it('a format the caller chose is not changed: a refusal is reported as it came (4.06 → IOTB_LWM2M_DEVICE_FORMAT)', async () => {
    const endpoint = await createEndpoint(service, tenant.token, { key: 'chosen-format', serviceId });
    const device = await devices.start('chosen-format', { ...CLIENT_PROFILES['1.1-ct110'] });
    assert.equal(await device.register(), '2.01');
    const from = device.received.length;
    const refused = await operate(endpoint.id, 'read', { path: '/3/0', format: 'senml-cbor' });
    assert.equal(refused.status, 415, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'IOTB_LWM2M_DEVICE_FORMAT');
    assert.equal(since(device, from).length, 1, 'asked once, not retried in another format');
  });
});
