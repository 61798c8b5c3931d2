// Issue 22, LwM2M across nodes: two nodes (spawned processes) on one PostgreSQL database and one Redis. A device
// registers with node 2 after node 1 started (node 1 never heard of it); node 2 is killed with kill -9 and the
// load balancer sends the device's datagrams to node 1. Its next Update is answered 2.04 (no new registration),
// its observation is taken up, and it is read and written through node 1. Another device, behind a UDP balancer,
// sends a notification first after the kill: node 1 takes its registration and observation up at that
// notification. A made-up registration id is 4.04.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { spawnedNodes } from '../helpers/cluster.js';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { eventSeen, FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { UdpBalancer } from '../helpers/udp-balancer.js';
import { redisSkip } from '../helpers/redis.js';
import { DIALECTS } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());

describe('LwM2M devices taken over by another node (PostgreSQL + Redis)', { skip }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodes: FuzzService[] = [];
  const clients: SimulatedClient[] = [];
  let token: string;
  let other: string;

  before(async () => {
    ({ database, nodes } = await spawnedNodes(['lwm2m-node-1', 'lwm2m-node-2']));
    ({ token } = await fuzzAccount(nodes[0]!, 'lwm2m-cluster'));
    ({ token: other } = await fuzzAccount(nodes[0]!, 'lwm2m-cluster-other'));
  });
  after(async () => {
    for (const client of clients) await client.stop();
    for (const node of nodes) if (node.alive) await node.stop();
    await database?.drop();
  });

  it("a device registered with a node that dies goes on with an Update to another node, which serves it and keeps its observation", async () => {
    const [survivor, victim] = [nodes[0]!, nodes[1]!];
    const serviceId = await fuzzService(survivor, token, { name: 'lwm2m', type: 'lwm2m' });
    await fuzzEndpoint(survivor, token, { key: 'roamer', serviceId });
    const device = new SimulatedClient({ server: { address: '127.0.0.1', port: victim.ports.coap! }, endpointName: 'roamer', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await device.start();
    clients.push(device);
    assert.equal(await device.register(), '2.01');
    const observed = await victim.request('POST', '/endpoints/k.roamer/lwm2m/observe', { token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(observed.json.observing, true, observed.text);
    const registered = (await victim.request('GET', '/endpoints/k.roamer/lwm2m/objects', { token })).json.registration;
    // A device behind a UDP balancer (source-address affinity) whose first message after the kill is a notification.
    const listenerId = await fuzzEndpoint(survivor, token, { key: 'listener', serviceId });
    const balancer = await UdpBalancer.start(victim.ports.coap!);
    const listener = new SimulatedClient({ server: { address: '127.0.0.1', port: balancer.port }, endpointName: 'listener', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await listener.start();
    clients.push(listener);
    assert.equal(await listener.register(), '2.01');
    const watched = await survivor.request('POST', '/endpoints/k.listener/lwm2m/observe', { token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(watched.json.observing, true, watched.text);

    await CrashTestStorage.kill(victim);
    balancer.use(survivor.ports.coap!);
    assert.equal(await listener.changeValue('/3303/0/5700', 33.5), 1, 'the notification goes to the node the balancer now sends to');
    await eventSeen(survivor, token, listenerId, 'lwm2m-data', (data: { token?: string; values?: { value: unknown }[] }) => data.token === watched.json.token && data.values?.[0]?.value === 33.5);
    const listening = (await survivor.request('GET', '/endpoints/k.listener/lwm2m/objects', { token })).json;
    assert.deepEqual(listening.observations.map((o: { token: string }) => o.token), [watched.json.token], 'its observation goes on there');
    assert.equal((await survivor.request('POST', '/endpoints/k.listener/lwm2m/read', { token, body: { path: '/3/0/9', timeout: 3000 } })).json.code, '2.05');
    balancer.close();
    // The load balancer now sends the device's datagrams to the survivor; the device keeps its socket.
    device.useServer({ address: '127.0.0.1', port: survivor.ports.coap! });
    assert.equal(await device.update(), '2.04', 'the registration is taken up, not refused');

    const objects = (await survivor.request('GET', '/endpoints/k.roamer/lwm2m/objects', { token })).json;
    assert.equal(objects.registration.id, registered.id, 'the same registration');
    assert.equal(objects.registration.registeredAt, registered.registeredAt);
    assert.deepEqual(objects.observations.map((o: { path: string; token: string }) => [o.path, o.token]), [['/3303/0/5700', observed.json.token]], 'its observation is taken up');
    const read = await survivor.request('POST', '/endpoints/k.roamer/lwm2m/read', { token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.values[0].value, 95);
    const written = await survivor.request('POST', '/endpoints/k.roamer/lwm2m/write', { token, body: { path: '/3/0/14', value: '+05:00', timeout: 3000 } });
    assert.equal(written.status, 200, written.text);
    assert.equal(device.values.get('/3/0/14')?.value, '+05:00');
    // Another account reaches nothing of it through the node that took it over.
    assert.equal((await survivor.request('POST', '/endpoints/k.roamer/lwm2m/read', { token: other, body: { path: '/3/0/9', timeout: 3000 } })).status, 404);
  });

  it('an Update to a registration nobody made, or one of a malformed id, is 4.04 and changes nothing', async () => {
    const survivor = nodes[0]!;
    const stranger = new SimulatedClient({ server: { address: '127.0.0.1', port: survivor.ports.coap! }, endpointName: 'nobody', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await stranger.start();
    clients.push(stranger);
    for (const location of ['/rd/made-up-id', `/rd/${'x'.repeat(200)}`, "/rd/' or 1=1 --"]) {
      stranger.location = location;
      assert.equal(await stranger.update(), '4.04', location);
    }
    assert.equal(survivor.alive, true);
  });
});
