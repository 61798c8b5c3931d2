// Issue 22, routing device calls between nodes: two nodes on one PostgreSQL database and one Redis. Devices talk
// to node B (UDP, TCP, LwM2M, MQTT); calls made on node A (a script test-run there, the LwM2M HTTP routes) run on
// node B, whose socket the device talks to, and are answered on A. Another account reaches nothing; a forged or
// unknown call on the Redis channel is refused without harm; when node B is gone, node A answers at once as for
// a device it never heard.
import assert from 'node:assert/strict';
import { serialize, deserialize } from 'node:v8';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { twoNodes } from '../helpers/cluster.js';
import { eventsArrive, TcpDevice, UdpDevice, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, setPassword } from '../helpers/mqtt.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';
import { DIALECTS, type TestService } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());

describe('device calls routed to the node the device talks to (PostgreSQL + Redis)', { skip }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodeA: TestService;
  let nodeB: TestService;
  let nodeBStopped = false;
  let a: TestAccount;
  let b: TestAccount;
  let udpService: string;
  let lwm2mService: string;
  const closers: (() => unknown)[] = [];
  const onB = new MqttDevices(() => nodeB.ports.mqtt!);

  /** Test-runs `script` on `node` (POST /triggers/run runs where it is asked, unlike a trigger, which runs where its shard is). */
  const runOn = async (node: TestService, account: TestAccount, script: string, endpoint?: string) => {
    const ran = await node.request('POST', '/triggers/run', { token: account.token, body: { trigger: { name: 'routing', events: ['routing'], script }, event: { type: 'routing', ...(endpoint && { endpoint }) } } });
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
    return ran.body.execution as { status: string; logs: string[]; error?: string };
  };

  before(async () => {
    ({ database, nodeA, nodeB } = await twoNodes());
    a = await createAccount(nodeA, 'routing-a');
    b = await createAccount(nodeA, 'routing-b');
    udpService = await createService(nodeA, a.token, { name: 'udp', type: 'udp' });
    lwm2mService = await createService(nodeA, a.token, { name: 'lwm2m', type: 'lwm2m' });
  });
  after(async () => {
    await onB.closeAll();
    for (const close of closers.reverse()) await close();
    if (!nodeBStopped) await nodeB?.stop();
    await nodeA?.stop();
    await database?.drop();
  });

  it('udp.send and udp.queue on node A go out of node B, where the device talks; another account reaches nothing', async () => {
    const meter = await createEndpoint(nodeA, a.token, { key: 'meter', serviceId: udpService });
    const device = await UdpDevice.open(nodeB.ports.udp!);
    closers.push(() => device.socket.close());
    const senders: number[] = [];
    device.socket.on('message', (_message, from) => senders.push(from.port));
    await device.send('meter:hello');
    await eventsArrive(nodeA, a.token, ['udp-message'], 1, meter.id as string);

    const sent = await runOn(nodeA, a, `log(JSON.stringify(udp.send('k.meter', 'pong', { encoding: 'utf8' })));`);
    assert.equal(sent.status, 'success', sent.error);
    assert.deepEqual(JSON.parse(sent.logs[0]!), { remoteAddr: device.address, bytes: 4 });
    assert.equal((await device.nth(1)).toString(), 'pong');
    assert.deepEqual(senders, [nodeB.ports.udp], "from node B's port, the one the device talks to");

    const queued = await runOn(nodeA, a, `log(JSON.stringify(udp.queue('k.meter', 'later', { encoding: 'utf8' })));`);
    assert.deepEqual(JSON.parse(queued.logs[0]!), { queued: 1 });
    await device.send('meter:again');
    assert.equal((await device.nth(2)).toString(), 'later', 'held on node B and sent after its next datagram');

    const stranger = await runOn(nodeA, b, `udp.send('${meter.id as string}', 'x', { encoding: 'utf8' });`);
    assert.match(stranger.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
    await sleep(200);
    assert.equal(device.received.length, 2, 'nothing from another account');
  });

  it('tcp.send on node A writes to the connection node B holds; MQTT subscribe on A subscribes the session connected to B', async () => {
    const tcpService = await createService(nodeA, a.token, { name: 'lines', type: 'tcp' });
    const gate = await createEndpoint(nodeA, a.token, { key: 'gate', serviceId: tcpService });
    const device = await TcpDevice.connect(nodeB.ports.tcp!);
    closers.push(() => device.socket.destroy());
    await device.write('gate\nhello\n');
    await eventsArrive(nodeA, a.token, ['tcp-message'], 1, gate.id as string);
    const sent = await runOn(nodeA, a, `tcp.send('k.gate', 'OPEN', { encoding: 'utf8' });`);
    assert.equal(sent.status, 'success', sent.error);
    assert.equal((await device.receivedAtLeast(5)).toString(), 'OPEN\n');
    assert.match((await runOn(nodeA, b, `tcp.send('${gate.id as string}', 'x', { encoding: 'utf8' });`)).error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);

    const mqttService = await createService(nodeA, a.token, { name: 'mqtt', type: 'mqtt' });
    const sensor = await createEndpoint(nodeA, a.token, { key: 'sensor', serviceId: mqttService });
    await setPassword(nodeA, a.token, sensor.id as string, 'routing-secret');
    const client = await onB.connect('sensor', 'routing-secret');
    await eventsArrive(nodeA, a.token, ['on-connect'], 1, sensor.id as string);
    const subscribed = await runOn(nodeA, a, `log(JSON.stringify(mqtt.subscribe('k.sensor', 'sensor/cmd', { qos: 1 }))); mqtt.publish('k.sensor', 'sensor/cmd', 'go', { qos: 1 });`);
    assert.equal(subscribed.status, 'success', subscribed.error);
    assert.equal(JSON.parse(subscribed.logs[0]!).connected, true, 'the session is live on node B');
    await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the message on the subscription made from node A');
    assert.deepEqual(client.received.map((m) => [m.topic, m.payload]), [['sensor/cmd', 'go']]);
  });

  it('the LwM2M routes and lwm2m.* on node A serve a device registered with node B; another account gets 404', async () => {
    await createEndpoint(nodeA, a.token, { key: 'tracker', serviceId: lwm2mService });
    const device = new SimulatedClient({ server: { address: '127.0.0.1', port: nodeB.ports.coap! }, endpointName: 'tracker', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await device.start();
    closers.push(() => device.stop());
    assert.equal(await device.register(), '2.01');

    const objects = await nodeA.request('GET', '/endpoints/k.tracker/lwm2m/objects', { token: a.token });
    assert.equal(objects.status, 200);
    assert.equal(objects.body.registered, true, 'node A sees the registration node B holds');
    const read = await nodeA.request('POST', '/endpoints/k.tracker/lwm2m/read', { token: a.token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.code, '2.05');
    assert.deepEqual(read.body.values.map((v: { path: string; value: unknown }) => [v.path, v.value]), [['/3/0/9', 95]]);
    const observed = await nodeA.request('POST', '/endpoints/k.tracker/lwm2m/observe', { token: a.token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(observed.body.observing, true, JSON.stringify(observed.body));
    const again = await nodeA.request('GET', '/endpoints/k.tracker/lwm2m/objects', { token: a.token });
    assert.deepEqual(again.body.observations.map((o: { path: string }) => o.path), ['/3303/0/5700']);
    const held = await nodeA.request('POST', '/endpoints/k.tracker/lwm2m/write', { token: a.token, body: { path: '/3/0/14', value: '+02:00', context: { job: 7 }, directToQueue: true } });
    assert.equal(held.status, 202, JSON.stringify(held.body));
    const queue = await nodeA.request('GET', '/endpoints/k.tracker/lwm2m/queue', { token: a.token });
    assert.deepEqual(queue.body.items.map((item: { id: string }) => item.id), [held.body.id], 'held where the registration is');
    assert.equal((await nodeA.request('DELETE', `/endpoints/k.tracker/lwm2m/queue/${held.body.id}`, { token: a.token })).status, 204);

    const scripted = await runOn(nodeA, a, `const r = lwm2m.read('k.tracker', '/3/0/0'); log(r.code, r.values[0].value);`);
    assert.equal(scripted.status, 'success', scripted.error);
    assert.deepEqual(scripted.logs, ['2.05 IoT Bridge']);

    const tracker = (await nodeA.request('GET', '/endpoints/k.tracker', { token: a.token })).body;
    const denied = await nodeA.request('POST', `/endpoints/${tracker.id}/lwm2m/read`, { token: b.token, body: { path: '/3/0/9' } });
    assert.equal(denied.status, 404);
    assert.equal(denied.body.error.code, 'IOTB_ENDPOINT_NOT_FOUND');
    assert.match((await runOn(nodeA, b, `lwm2m.read('${tracker.id as string}', '/3/0/0');`)).error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
  });

  it('an LwM2M device whose first message to node A is a Send is taken up there (2.04, not "register first"); calls then go to A', async () => {
    await createEndpoint(nodeA, a.token, { key: 'sender', serviceId: lwm2mService });
    const device = new SimulatedClient({ server: { address: '127.0.0.1', port: nodeB.ports.coap! }, endpointName: 'sender', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await device.start();
    closers.push(() => device.stop());
    assert.equal(await device.register(), '2.01');
    const registered = (await nodeB.request('GET', '/endpoints/k.sender/lwm2m/objects', { token: a.token })).body.registration;
    // The load balancer now sends its datagrams to node A, and the first of them is a Send.
    device.useServer({ address: '127.0.0.1', port: nodeA.ports.coap! });
    await device.changeValue('/3303/0/5700', 30.5);
    assert.equal(await device.send(['/3303/0/5700']), '2.04');
    const sender = (await nodeA.request('GET', '/endpoints/k.sender', { token: a.token })).body;
    const [data] = await eventsArrive(nodeA, a.token, ['lwm2m-data'], 1, sender.id as string);
    assert.deepEqual((data!.data as { values: { path: string; value: unknown }[] }).values.map((v) => [v.path, v.value]), [['/3303/0/5700', 30.5]]);
    // Node B's API reaches it through node A, which now holds the same registration.
    const objects = await nodeB.request('GET', '/endpoints/k.sender/lwm2m/objects', { token: a.token });
    assert.equal(objects.body.registration.id, registered.id);
    const read = await nodeB.request('POST', '/endpoints/k.sender/lwm2m/read', { token: a.token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(read.body.code, '2.05', JSON.stringify(read.body));
    // A Send from an address no registration has is still refused.
    const stranger = new SimulatedClient({ server: { address: '127.0.0.1', port: nodeA.ports.coap! }, endpointName: 'stranger', transmission: { ackTimeout: 500, maxRetransmit: 1 } });
    await stranger.start();
    closers.push(() => stranger.stop());
    assert.equal(await stranger.send(['/3303/0/5700']), '4.04');
  });

  it('a request held for a device on node B goes with the device to node A: delivered there once, and B lets go of it', async () => {
    const mover = await createEndpoint(nodeA, a.token, { key: 'mover', serviceId: lwm2mService });
    const device = new SimulatedClient({ server: { address: '127.0.0.1', port: nodeB.ports.coap! }, endpointName: 'mover', transmission: { ackTimeout: 500, maxRetransmit: 2 } });
    await device.start();
    closers.push(() => device.stop());
    assert.equal(await device.register(), '2.01');
    // Held on node B (where the device is), for at most 4 s, until the device's next update.
    const held = await nodeA.request('POST', '/endpoints/k.mover/lwm2m/write', { token: a.token, body: { path: '/3/0/14', value: '+03:00', context: { job: 'tz' }, directToQueue: true, queueTimeout: 4000 } });
    assert.equal(held.status, 202, JSON.stringify(held.body));
    assert.equal((await nodeA.request('GET', '/endpoints/k.mover/lwm2m/queue', { token: a.token })).body.items.length, 1, 'held where the device is');
    // The load balancer moves the device to node A: its Update there takes the registration and the request up.
    device.useServer({ address: '127.0.0.1', port: nodeA.ports.coap! });
    assert.equal(await device.update(), '2.04');
    await waitFor(async () => (device.values.get('/3/0/14')?.value === '+03:00' ? true : undefined), 'the write delivered by node A');
    await sleep(4500); // past the request's time in the queue: node B must not end it as expired
    const results = (await nodeA.request('GET', `/history?type=lwm2m-result&endpoint=${mover.id as string}&limit=50`, { token: a.token })).body.items as { data: { id: string; outcome?: string; intermediate?: boolean } }[];
    assert.deepEqual(results.filter((event) => event.data.id === held.body.id && !event.data.intermediate).map((event) => event.data.outcome), ['delivered'], 'once, and never expired by node B');
    assert.equal((await nodeB.request('GET', '/endpoints/k.mover/lwm2m/queue', { token: a.token })).body.items.length, 0);
  });

  it('forged calls on the Redis channel between nodes are refused and harm nothing: unreadable bytes, an unknown channel, a method not served', async () => {
    const nodeBId = ((await nodeB.request('GET', '/ready')).body as { node: string }).node;
    const probe = new Redis(TEST_REDIS_URL);
    const listener = new Redis(TEST_REDIS_URL);
    closers.push(() => probe.disconnect(), () => listener.disconnect());
    const replies: { kind: string; id: string; code?: string }[] = [];
    listener.on('messageBuffer', (_channel: Buffer, message: Buffer) => replies.push(deserialize(message) as { kind: string; id: string; code?: string }));
    await listener.subscribe('iotbridge:calls:routing-probe');
    const call = (id: string, target: string, method: string, args: unknown) =>
      probe.publish(`iotbridge:calls:${nodeBId}`, serialize({ kind: 'call', id, from: 'routing-probe', target, method, args }));
    await probe.publish(`iotbridge:calls:${nodeBId}`, Buffer.from([0xff, 0x0d, 0x00, 0x42]));
    await call('not-served', 'lwm2m', 'constructor', []);
    await call('no-channel', 'shell', 'run', []);
    await call('bad-args', 'udp', 'send', 'not an array');
    await waitFor(async () => (replies.filter((r) => r.kind === 'error').length >= 3 ? true : undefined), 'three refusals');
    assert.deepEqual(replies.filter((r) => r.kind === 'error').map((r) => [r.id, r.code]).sort(), [['bad-args', 'IOTB_INTERNAL'], ['no-channel', 'IOTB_INTERNAL'], ['not-served', 'IOTB_INTERNAL']]);
    assert.equal((await nodeB.request('GET', '/ready')).status, 200, 'node B still serves');
    assert.equal((await nodeA.request('GET', '/endpoints/k.tracker/lwm2m/objects', { token: a.token })).body.registered, true, 'and still answers node A');
  });

  it('when node B is gone, node A answers at once as for a device it never heard', async () => {
    await nodeB.stop();
    nodeBStopped = true;
    const objects = await nodeA.request('GET', '/endpoints/k.tracker/lwm2m/objects', { token: a.token });
    assert.equal(objects.status, 200);
    assert.equal(objects.body.registered, false);
    const read = await nodeA.request('POST', '/endpoints/k.tracker/lwm2m/read', { token: a.token, body: { path: '/3/0/9', timeout: 1000 } });
    // As in one process for a device that is not registered: the request waits for it, then times out.
    assert.equal(read.body.error?.code, 'IOTB_LWM2M_TIMEOUT', JSON.stringify(read.body));
  });
});
