// Issue 22, "Done means": three service processes on one PostgreSQL database and one Redis, devices (MQTT, the LwM2M
// simulator, UDP) and API clients spread over them, a trigger running; one node is killed with kill -9 in the middle
// of the stream. Every event a node accepted (HTTP 202, MQTT PUBACK, LwM2M Send 2.04) must be handled by a survivor;
// events handled twice are counted. The dead node's LwM2M and UDP devices are reachable again, through any node,
// after their next message reaches a survivor.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt from 'mqtt';
import { clusterSettled, forgetCache, handledCounts, spawnedNodes } from '../helpers/cluster.js';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { UdpDevice, waitFor } from '../helpers/devices.js';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { eventSeen, FuzzService, fuzzAccount, fuzzService } from '../helpers/fuzz.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';
import { DIALECTS } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());
const PASSWORD = 'cluster-device-password';
/**
 * Counted in Redis by the trigger: one key per accepted event, whichever node runs it. A device's MQTT message is
 * forwarded to the sink device (connected to a node that survives) from whichever node runs the trigger.
 */
const script = (sinkId: string) => `
const mark = event.type === 'mqtt-publish' ? 'm:' + event.data.text
  : event.type === 'lwm2m-data' ? 'l:' + event.endpointKey + ':' + event.data.values[0].value
  : 'h:' + event.id;
cache.incr(mark, 1, 3600);
if (event.type === 'mqtt-publish') mqtt.publish(${JSON.stringify(sinkId)}, 'sink/in', event.data.text, {qos: 1});
// In flight for a while, so the kill finds events being handled.
trigger.wait('cluster-pause', 20);
`;

describe('a cluster of three nodes loses no accepted event when one is killed (PostgreSQL + Redis)', { skip, timeout: 240_000 }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodes: FuzzService[] = [];
  let accountId: string;
  let token: string;

  before(async () => {
    ({ database, nodes } = await spawnedNodes(['node-1', 'node-2', 'node-3'], { IOTBRIDGE_SCRIPT_WORKERS: '2', IOTBRIDGE_ENDPOINT_SEND_RATE: '10000' }));
    ({ accountId, token } = await fuzzAccount(nodes[0]!, 'cluster-kill'));
  });
  after(async () => {
    await forgetCache(TEST_REDIS_URL, accountId);
    for (const node of nodes) if (node.alive) await node.stop();
    await database?.drop();
  });

  it('runs every event accepted before and after the kill on the survivors, and counts the ones run twice', async (t) => {
    const serviceId = await fuzzService(nodes[0]!, token, { name: 'cluster devices', type: 'mqtt' });
    const items = Array.from({ length: 30 }, (_, i) => ({ key: `dev-${i}`, serviceId, credentials: { password: PASSWORD } }));
    const bulk = await nodes[0]!.request('POST', '/endpoints/bulk', { token, body: { items } });
    assert.equal(bulk.status, 200, bulk.text);
    const endpointIds = (bulk.json.items as { endpoint: { id: string } }[]).map((item) => item.endpoint.id);
    const sinkItem = await nodes[0]!.request('POST', '/endpoints/bulk', { token, body: { items: [{ key: 'sink', serviceId, credentials: { password: PASSWORD } }] } });
    const sinkId = (sinkItem.json.items as { endpoint: { id: string } }[])[0]!.endpoint.id;
    // The sink: a persistent session on node 1, so what is published to it while it is away is kept.
    const sink = await mqtt.connectAsync(`mqtt://127.0.0.1:${nodes[0]!.ports.mqtt}`, { username: 'sink', password: PASSWORD, clientId: 'sink', clean: false, reconnectPeriod: 0, connectTimeout: 5000 });
    const delivered = new Set<string>();
    sink.on('message', (_topic, payload) => delivered.add(`m:${payload.toString()}`));
    await sink.subscribeAsync('sink/in', { qos: 1 });
    const trigger = await nodes[1]!.request('POST', '/triggers', { token, body: { name: 'count', events: ['reading', 'mqtt-publish', 'lwm2m-data'], script: script(sinkId) } });
    assert.equal(trigger.status, 201, trigger.text);
    // An LwM2M device and a UDP device on each node.
    const lwm2mServiceId = await fuzzService(nodes[0]!, token, { name: 'cluster lwm2m', type: 'lwm2m' });
    const udpServiceId = await fuzzService(nodes[0]!, token, { name: 'cluster udp', type: 'udp' });
    const others = [...nodes.map((_, n) => ({ key: `lw-${n}`, serviceId: lwm2mServiceId })), ...nodes.map((_, n) => ({ key: `udp-${n}`, serviceId: udpServiceId }))];
    assert.equal((await nodes[0]!.request('POST', '/endpoints/bulk', { token, body: { items: others } })).status, 200);
    const lwm2mDevices = await Promise.all(
      nodes.map(async (node, n) => {
        const device = new SimulatedClient({ server: { address: '127.0.0.1', port: node.ports.coap! }, endpointName: `lw-${n}`, transmission: { ackTimeout: 500, maxRetransmit: 1 } });
        await device.start();
        assert.equal(await device.register(), '2.01');
        return device;
      }),
    );
    t.after(() => Promise.all(lwm2mDevices.map((device) => device.stop())));
    const udpDevices = await Promise.all(nodes.map((node) => UdpDevice.open(node.ports.udp!)));
    t.after(() => udpDevices.forEach((device) => device.socket.close()));

    const accepted: string[] = [];
    const victim = nodes[2]!;
    let stop = false;
    // MQTT devices, one per node, publishing at QoS 1: a PUBACK means the event is accepted.
    const publishers = nodes.map(async (node, n) => {
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${node.ports.mqtt}`, { username: `dev-${n}`, password: PASSWORD, clientId: `publisher-${n}`, reconnectPeriod: 0, connectTimeout: 5000 });
      client.on('error', () => undefined);
      // mqtt.js leaves a QoS 1 publish pending when the connection drops and does not reconnect.
      const closed = new Promise<never>((_, reject) => client.once('close', () => reject(new Error('connection closed'))));
      closed.catch(() => undefined);
      for (let i = 0; !stop; i++) {
        const text = `q-${n}-${i}`;
        try {
          await Promise.race([client.publishAsync(`dev-${n}/reading`, text, { qos: 1 }), closed]);
          accepted.push(`m:${text}`);
        } catch {
          break; // the node is gone: what was not PUBACKed was not accepted
        }
        await sleep(15);
      }
      client.end(true);
    });
    // LwM2M devices sending a new value each time (LwM2M 1.1 Send): a 2.04 means accepted.
    const senders = lwm2mDevices.map(async (device, n) => {
      for (let i = 0; !stop; i++) {
        const value = n * 1_000_000 + i;
        await device.changeValue('/3303/0/5700', value);
        const code = await device.send(['/3303/0/5700']).catch(() => undefined);
        if (code === '2.04') accepted.push(`l:lw-${n}:${value}`);
        else if (!nodes[n]!.alive) break;
        await sleep(30);
      }
    });
    // UDP devices: datagrams are not acknowledged, so they count for reachability only.
    const udpSenders = udpDevices.map(async (device, n) => {
      for (let i = 0; !stop; i++) {
        await device.send(`udp-${n}:r${i}`).catch(() => undefined);
        await sleep(50);
      }
    });
    // API clients posting events of the 30 endpoints round the nodes: a 202 means accepted.
    const posters = [0, 1, 2, 3, 4, 5].map(async (worker) => {
      for (let i = worker; !stop; i += 6) {
        // Clients of the dead node move to the next live one, as a load balancer would send them.
        const live = nodes.filter((node) => node.alive);
        const node = live[i % live.length]!;
        const posted = await node.request('POST', '/events', { token, body: { type: 'reading', endpoint: endpointIds[i % endpointIds.length], data: { n: i } } }).catch(() => undefined);
        if (posted?.status === 202) accepted.push(`h:${posted.json.id as string}`);
      }
    });
    await sleep(3000);
    const beforeKill = accepted.length;
    await CrashTestStorage.kill(victim);
    await sleep(3000);
    stop = true;
    await Promise.all([...publishers, ...posters, ...senders, ...udpSenders]);
    const kinds = (prefix: string) => accepted.filter((mark) => mark.startsWith(prefix)).length;
    t.diagnostic(`accepted ${accepted.length} events (${beforeKill} before the kill): HTTP ${kinds('h:')}, MQTT ${kinds('m:')}, LwM2M Send ${kinds('l:')}`);

    // The survivors take the dead node's shards once its leases expire (10 s) and run its backlog.
    const counts = await handledCounts(TEST_REDIS_URL, accountId, accepted, 90_000);
    const lost = accepted.filter((_, i) => counts[i] === 0);
    const twice = counts.filter((count) => count > 1).length;
    const published = accepted.filter((mark) => mark.startsWith('m:'));
    await waitFor(async () => (published.every((mark) => delivered.has(mark)) ? true : undefined), 'the MQTT messages forwarded to the sink', 30_000).catch(() => undefined);
    const undelivered = published.filter((mark) => !delivered.has(mark));
    sink.end(true);
    t.diagnostic(`lost ${lost.length}, handled twice ${twice}; MQTT QoS 1 messages PUBACKed ${published.length}, never delivered to the sink on another node ${undelivered.length}`);
    if (undelivered.length > 0) t.diagnostic(`undelivered ${undelivered.map((mark) => `${mark} (run ${counts[accepted.indexOf(mark)]})`).join(', ')}`);
    assert.deepEqual(undelivered.slice(0, 10), [], `${undelivered.length} PUBACKed MQTT messages never reached the sink`);
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} accepted events were never handled`);
    assert.ok(counts.every((count) => count <= 2), 'no event runs more than twice (once on the dead node, once on a survivor)');
    assert.ok(beforeKill > 50 && accepted.length > beforeKill, 'events were accepted before and after the kill');

    // The two survivors hold every shard between them.
    assert.deepEqual((await clusterSettled(nodes.slice(0, 2))).reduce((a, b) => a + b, 0), 64);

    const [first, second] = [nodes[0]!, nodes[1]!];
    // The MQTT device whose connection died with the node is disconnected by a survivor, once.
    await eventSeen(first, token, endpointIds[2]!, 'on-disconnect', (data: { reason?: string }) => data.reason === 'node lost', 30_000);
    const disconnects = await first.request('GET', `/history?type=on-disconnect&endpoint=${endpointIds[2]!}&limit=50`, { token });
    assert.equal((disconnects.json.items as unknown[]).length, 1, 'one on-disconnect, whichever survivors noticed');
    assert.equal((await first.request('GET', `/endpoints/${endpointIds[2]!}`, { token })).json.state, 'unavailable');

    // The dead node's devices: their next message reaches a survivor (the load balancer moves them); from then on a
    // call on any node reaches them there. The LwM2M device goes on with an Update, not a new registration.
    lwm2mDevices[2]!.useServer({ address: '127.0.0.1', port: first.ports.coap! });
    assert.equal(await lwm2mDevices[2]!.update(), '2.04', 'the registration is taken up');
    const read = await second.request('POST', '/endpoints/k.lw-2/lwm2m/read', { token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(read.json.code, '2.05', read.text);
    const udpRoamer = await UdpDevice.open(first.ports.udp!);
    t.after(() => udpRoamer.socket.close());
    await udpRoamer.send('udp-2:moved');
    const udpEndpoint = (await second.request('GET', '/endpoints/k.udp-2', { token })).json.id as string;
    await waitFor(async () => ((await second.request('GET', `/endpoints/${udpEndpoint}`, { token })).json.statusDetails.remoteAddr === udpRoamer.address ? true : undefined), 'the UDP device heard on node 1');
    const ran = await second.request('POST', '/triggers/run', { token, body: { trigger: { name: 'reach', events: ['reach'], script: "udp.send('k.udp-2', 'back', { encoding: 'utf8' });" }, event: { type: 'reach' } } });
    assert.equal(ran.json.execution.status, 'success', ran.text);
    assert.equal((await udpRoamer.nth(1)).toString(), 'back');
    t.diagnostic('the dead node\'s LwM2M device (Update taken up, read through another node) and UDP device (udp.send through another node) reachable again');
  });
});
