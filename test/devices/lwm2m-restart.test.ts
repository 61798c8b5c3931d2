import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_VALUES, SimulatedClient } from '../../tools/lwm2m-client.js';
import { until } from '../helpers/devices.js';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

/** A UDP port free on loopback now, for a service that must come back on the same port. */
async function freeUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

/**
 * LwM2M registrations survive kill -9 (issue "LwM2M in production"): the service process is killed with
 * SIGKILL and started again on the same data and port; devices registered before go on with Updates
 * (2.04, not 4.04) and are reachable for device management without registering again.
 */
for (const dialect of DIALECTS) describe(`LwM2M registrations across kill -9 (${dialect.name})`, { skip: dialect.skip }, () => {
  let dataDir: string;
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let coapPort: number;
  let service: FuzzService;
  let token: string;
  const clients: SimulatedClient[] = [];
  const env = () => ({ IOTBRIDGE_DATA_DIR: dataDir, IOTBRIDGE_COAP_PORT: String(coapPort), ...(database && { IOTBRIDGE_DATABASE_URL: database.url }) });
  const device = async (endpointName: string, lifetime = 300) => {
    const client = new SimulatedClient({ server: { address: '127.0.0.1', port: coapPort }, endpointName, lifetime, transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await client.start();
    clients.push(client);
    assert.equal(await client.register(), '2.01');
    return client;
  };
  const operate = (ref: string, operation: string, body: Record<string, unknown>) =>
    service.request('POST', `/endpoints/${ref}/lwm2m/${operation}`, { token, body: { timeout: 3000, ...body } });

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-lwm2m-restart-'));
    if (dialect.name === 'postgres') database = await throwAwayPostgres();
    coapPort = await freeUdpPort();
    service = await FuzzService.start(env());
  });
  after(async () => {
    for (const client of clients) await client.stop();
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
    await database?.drop();
  });

  it('a device registered before the crash updates (2.04), keeps its last-known values and observations and is read after it; de-registered and expired ones are not back', async () => {
    const tenant = await fuzzAccount(service, 'lwm2m-restart');
    token = tenant.token;
    const serviceId = await fuzzService(service, token, { name: 'lwm2m', type: 'lwm2m' });
    for (const key of ['survivor', 'leaver', 'short-lived']) await fuzzEndpoint(service, token, { key, serviceId });
    const survivor = await device('survivor');
    const leaver = await device('leaver');
    const shortLived = await device('short-lived', 1);
    assert.equal((await operate('k.survivor', 'read', { path: '/3/0/9' })).status, 200);
    const observed = await operate('k.survivor', 'observe', { path: '/3303/0/5700' });
    assert.equal(observed.json.observing, true, observed.text);
    const composite = await operate('k.survivor', 'observeComposite', { paths: ['/3/0/9', '/3303/0/5701'] });
    assert.equal(composite.json.observing, true, composite.text);
    const before = (await service.request('GET', '/endpoints/k.survivor/lwm2m/objects', { token })).json;
    const leaverLocation = leaver.location;
    assert.equal(await leaver.deregister(), '2.02');

    service.child.kill('SIGKILL');
    await new Promise((resolve) => service.child.once('exit', resolve));
    await sleep(1100); // the short-lived registration's lifetime (1 s) runs out while the service is down
    service = await FuzzService.start(env());
    assert.equal(service.ports.coap, coapPort);

    const known = (await service.request('GET', '/endpoints/k.survivor/lwm2m/objects', { token })).json.lastKnown;
    assert.deepEqual(
      Object.fromEntries(known.map((v: { path: string; value: unknown }) => [v.path, v.value])),
      { '/3/0/9': 95, '/3303/0/5700': 21.5, '/3303/0/5701': 'Cel' },
      'last-known values were kept',
    );
    assert.equal(await survivor.update(), '2.04', 'the registration was kept');
    // Notifications of observations made before the crash still become lwm2m-data with the same tokens.
    assert.equal(await survivor.changeValue('/3303/0/5700', 31.5), 1);
    assert.equal(await survivor.changeValue('/3303/0/5701', 'Far'), 1);
    const notified = async () => {
      const found = await service.request('GET', '/history?limit=100', { token });
      return (found.json.items as { type: string; data: { operation: string; token: string; values: { path: string; value: unknown }[] } }[]).filter((e) => e.type === 'lwm2m-data' && e.data.operation === 'observe');
    };
    await until(async () => (await notified()).some((e) => e.data.token === observed.json.token && e.data.values.some((v) => v.value === 31.5)), 'the notification after the restart');
    await until(async () => (await notified()).some((e) => e.data.token === composite.json.token && e.data.values.some((v) => v.value === 'Far')), 'the composite notification after the restart');
    const observations = (await service.request('GET', '/endpoints/k.survivor/lwm2m/objects', { token })).json.observations.map((o: { path: string; token: string }) => [o.path, o.token]);
    assert.deepEqual(observations, [['/', composite.json.token], ['/3303/0/5700', observed.json.token]]);
    assert.equal((await operate('k.survivor', 'cancelObserve', { path: '/3303/0/5700' })).status, 200, 'a resumed observation can be cancelled');
    assert.equal(await survivor.changeValue('/3303/0/5700', 32.5), 0, 'and the device was told (RFC 7641 3.6)');
    const read = await operate('k.survivor', 'read', { path: '/3/0/9' });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.values[0].value, 95);
    const afterRestart = (await service.request('GET', '/endpoints/k.survivor/lwm2m/objects', { token })).json;
    assert.equal(afterRestart.registration.id, before.registration.id, 'the same registration');
    assert.equal(afterRestart.registration.registeredAt, before.registration.registeredAt);

    assert.equal(await shortLived.update(), '4.04', 'an expired registration is not back');
    leaver.location = leaverLocation;
    assert.equal(await leaver.update(), '4.04', 'a de-registered device is not back');
    assert.equal((await service.request('GET', '/endpoints/k.leaver/lwm2m/objects', { token })).json.registered, false);
    assert.equal((await service.request('GET', '/endpoints/k.short-lived/lwm2m/objects', { token })).json.registered, false);
  });

  it('requests held for devices (with a context, proxy_send) are delivered after kill -9: at the next update, or at the registration', async () => {
    const serviceId = await fuzzService(service, token, { name: 'lwm2m-held', type: 'lwm2m' });
    for (const key of ['held-update', 'held-later']) await fuzzEndpoint(service, token, { key, serviceId });
    const awake = await device('held-update');
    const queued = await operate('k.held-update', 'write', { path: '/3/0/14', value: '+07:00', directToQueue: true, context: 'after-update' });
    assert.equal(queued.status, 202, queued.text);
    const proxied = await service.request('POST', '/endpoints/k.held-later/lwm2m/proxy_send', { token, body: { operation: 'exec', path: '/3/0/4', context: 'after-register' } });
    assert.equal(proxied.status, 202, proxied.text);
    assert.equal(awake.values.get('/3/0/14')?.value, '+01:00', 'nothing sent before the update');
    await fuzzEndpoint(service, token, { key: 'held-bootstrap', serviceId });
    const configured = await service.request('PUT', '/endpoints/k.held-bootstrap/bootstrap', { token, body: { servers: [{ uri: `coap://127.0.0.1:${coapPort}`, shortServerId: 3, securityMode: 'nosec' }] } });
    assert.equal(configured.status, 200, configured.text);

    service.child.kill('SIGKILL');
    await new Promise((resolve) => service.child.once('exit', resolve));
    service = await FuzzService.start(env());

    const waiting = (await service.request('GET', '/endpoints/k.held-update/lwm2m/queue', { token })).json;
    assert.deepEqual(waiting.items.map((i: { id: string }) => i.id), [queued.json.id], 'still held after the crash');
    assert.equal(await awake.update(), '2.04');
    await until(async () => awake.values.get('/3/0/14')?.value === '+07:00', 'the held write at the update');
    const later = new SimulatedClient({ server: { address: '127.0.0.1', port: coapPort }, endpointName: 'held-later', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await later.start();
    clients.push(later);
    assert.equal(await later.register(), '2.01');
    await until(async () => later.executed.length === 1, 'the proxy_send exec at the registration');
    const results = async () => {
      const found = await service.request('GET', '/history?type=lwm2m-result&limit=100', { token });
      return (found.json.items as { data: { id: string; intermediate: boolean; outcome?: string; context: unknown } }[]).map((e) => e.data).filter((d) => !d.intermediate);
    };
    await until(async () => (await results()).length === 2, 'both outcomes');
    // The bootstrap configuration stored before the crash is what a device gets after it.
    const fresh = new SimulatedClient({ endpointName: 'held-bootstrap', values: DEFAULT_VALUES.filter((r) => !r.path.startsWith('/1/')), transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await fresh.start();
    clients.push(fresh);
    const bootstrapped = await fresh.bootstrap({ address: '127.0.0.1', port: coapPort }, { timeoutMs: 10_000 });
    assert.deepEqual([bootstrapped.finished, bootstrapped.server?.shortServerId], [true, 3]);
    assert.equal(await fresh.register(), '2.01');
    assert.deepEqual((await results()).map((r) => [r.id, r.outcome, r.context]).sort(), [
      [queued.json.id, 'delivered', 'after-update'],
      [proxied.json.id, 'delivered', 'after-register'],
    ].sort());
  });
});
