// Issue 22, what no node of a cluster holds any more: two nodes on one PostgreSQL database and one Redis, with a
// short sweep period (IOTBRIDGE_LWM2M_SWEEP_MS). A device that registers anew on node A after it was registered
// with node B leaves its old registration's observation in the store: one sweep removes it. A request held on node
// B for a device that never comes back, after node B stops: node A's sweep ends it as expired, with exactly one
// lwm2m-result event, in the device's own account.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { twoNodes } from '../helpers/cluster.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { redisSkip } from '../helpers/redis.js';
import { DIALECTS, type TestService } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());
const SWEEP_MS = 400;

describe('LwM2M state no node holds is ended by one node (PostgreSQL + Redis)', { skip }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let store: Database;
  let nodeA: TestService;
  let nodeB: TestService;
  let nodeBStopped = false;
  let a: TestAccount;
  let other: TestAccount;
  let lwm2mService: string;
  const devices: SimulatedClient[] = [];

  const device = async (name: string, port: number) => {
    const client = new SimulatedClient({ server: { address: '127.0.0.1', port }, endpointName: name, transmission: { ackTimeout: 500, maxRetransmit: 1 } });
    await client.start();
    devices.push(client);
    return client;
  };

  before(async () => {
    ({ database, nodeA, nodeB } = await twoNodes({ lwm2mSweepMs: SWEEP_MS }));
    store = openDatabase({ dataDir: '/nonexistent', databaseUrl: database.url });
    a = await createAccount(nodeA, 'orphans-a');
    other = await createAccount(nodeA, 'orphans-other');
    lwm2mService = await createService(nodeA, a.token, { name: 'lwm2m', type: 'lwm2m' });
  });
  after(async () => {
    for (const client of devices) await client.stop();
    if (!nodeBStopped) await nodeB?.stop();
    await nodeA?.stop();
    await store?.close();
    await database?.drop();
  });

  it('a device that registers anew on node A leaves its observation on node B in the store; a sweep removes it, not the new one', async () => {
    await createEndpoint(nodeA, a.token, { key: 'mover', serviceId: lwm2mService });
    const mover = await device('mover', nodeB.ports.coap!);
    assert.equal(await mover.register(), '2.01');
    const oldObservation = await nodeB.request('POST', '/endpoints/k.mover/lwm2m/observe', { token: a.token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(oldObservation.body.observing, true, JSON.stringify(oldObservation.body));
    // The load balancer moves the device to node A, where it registers anew (it rebooted): a new registration id.
    mover.useServer({ address: '127.0.0.1', port: nodeA.ports.coap! });
    assert.equal(await mover.register(), '2.01');
    const newObservation = await nodeA.request('POST', '/endpoints/k.mover/lwm2m/observe', { token: a.token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(newObservation.body.observing, true, JSON.stringify(newObservation.body));
    await waitFor(async () => {
      const tokens = (await store.db.selectFrom('lwm2m_observations').select('token').execute()).map((row) => row.token);
      return tokens.includes(oldObservation.body.token) ? undefined : tokens;
    }, 'the old registration\'s observation removed').then((tokens) => assert.deepEqual(tokens, [newObservation.body.token], 'the new one stays'));
    const objects = (await nodeA.request('GET', '/endpoints/k.mover/lwm2m/objects', { token: a.token })).body;
    assert.deepEqual(objects.observations.map((o: { token: string }) => o.token), [newObservation.body.token]);
  });

  it('a request held on node B for a device that never comes back ends as expired once, through node A, after node B stops', async () => {
    const sleeper = await createEndpoint(nodeA, a.token, { key: 'sleeper', serviceId: lwm2mService });
    const client = await device('sleeper', nodeB.ports.coap!);
    assert.equal(await client.register(), '2.01');
    const held = await nodeB.request('POST', '/endpoints/k.sleeper/lwm2m/write', { token: a.token, body: { path: '/3/0/14', value: '+03:00', context: { job: 'tz' }, directToQueue: true, queueTimeout: 1000 } });
    assert.equal(held.status, 202, JSON.stringify(held.body));
    // The device goes silent for good and node B stops: nobody's timer is on the request any more.
    await client.stop();
    await nodeB.stop();
    nodeBStopped = true;
    assert.equal((await store.db.selectFrom('lwm2m_queue').select('id').execute()).length, 1, 'the request is still stored');
    const ended = await waitFor(async () => {
      const items = (await nodeA.request('GET', `/history?type=lwm2m-result&endpoint=${sleeper.id as string}&limit=50`, { token: a.token })).body.items as { data: { id: string; outcome?: string; intermediate?: boolean; context?: unknown; error?: { code: string } } }[];
      const final = items.filter((event) => event.data.id === held.body.id && !event.data.intermediate);
      return final.length > 0 ? final : undefined;
    }, 'the held request ended');
    await sleep(SWEEP_MS * 3); // more sweeps: none ends it again
    const items = (await nodeA.request('GET', `/history?type=lwm2m-result&endpoint=${sleeper.id as string}&limit=50`, { token: a.token })).body.items as { data: { id: string; intermediate?: boolean; outcome?: string } }[];
    assert.deepEqual(items.filter((event) => event.data.id === held.body.id && !event.data.intermediate).map((event) => event.data.outcome), ['expired'], 'exactly once');
    assert.deepEqual(ended[0]!.data.context, { job: 'tz' });
    assert.equal(ended[0]!.data.error?.code, 'IOTB_LWM2M_TIMEOUT');
    assert.equal((await store.db.selectFrom('lwm2m_queue').select('id').execute()).length, 0, 'and leaves the store');
    const seenByOther = (await nodeA.request('GET', '/history?type=lwm2m-result&limit=50', { token: other.token })).body.items as unknown[];
    assert.equal(seenByOther.length, 0, 'another account sees nothing of it');
  });
});
