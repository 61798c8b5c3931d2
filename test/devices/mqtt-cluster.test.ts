// Issue 22, MQTT across nodes: two nodes on one PostgreSQL database and one Redis. A script on node A (a trigger
// runs on whichever node holds its shard) publishes to a device connected to node B; a retained message, a
// persistent session's subscriptions and its queued QoS 1 messages follow the device to whichever node it
// connects to; a device connecting to node B takes its session over from node A. Another account's device with
// the same key hears nothing; topic filters with Redis glob characters match only what MQTT matches.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { twoNodes } from '../helpers/cluster.js';
import { eventsArrive, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, setPassword } from '../helpers/mqtt.js';
import { redisSkip } from '../helpers/redis.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, type TestService } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());
const PASSWORD = 'cluster-mqtt-secret';

describe('MQTT across the nodes of a cluster (PostgreSQL + Redis)', { skip }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodeA: TestService;
  let nodeB: TestService;
  /** The last case stops node B. */
  let nodeBStopped = false;
  let a: TestAccount;
  let b: TestAccount;
  let serviceA: string;
  const onA = new MqttDevices(() => nodeA.ports.mqtt!);
  const onB = new MqttDevices(() => nodeB.ports.mqtt!);
  const device = async (account: TestAccount, serviceId: string, key: string, password = PASSWORD) => {
    const endpoint = await createEndpoint(nodeA, account.token, { key, serviceId });
    await setPassword(nodeA, account.token, endpoint.id as string, password);
    return endpoint;
  };
  const publishOn = async (node: TestService, account: TestAccount, endpointId: unknown, call: string) => {
    const result = await runScript(node, account.token, call, { endpoint: endpointId as string });
    assert.equal(result.status, 'success', result.error ?? '');
    return result;
  };

  before(async () => {
    ({ database, nodeA, nodeB } = await twoNodes());
    a = await createAccount(nodeA, 'mqtt-cluster-a');
    b = await createAccount(nodeA, 'mqtt-cluster-b');
    serviceA = await createService(nodeA, a.token, { name: 'cluster mqtt a', type: 'mqtt' });
  });
  after(async () => {
    await onA.closeAll();
    await onB.closeAll();
    if (!nodeBStopped) await nodeB?.stop();
    await nodeA?.stop();
    await database?.drop();
  });

  it('mqtt.publish on node A reaches a device on node B; a retained message set on A reaches a subscriber on B; another service or account hears nothing', async () => {
    const target = await device(a, serviceA, 'shared-1');
    // Another service's device of the same key (another password), subscribed to the same filter, on both nodes.
    const otherService = await createService(nodeA, a.token, { name: 'cluster mqtt a2', type: 'mqtt' });
    await device(a, otherService, 'shared-1', `${PASSWORD}-2`);
    const client = await onB.connect('shared-1', PASSWORD);
    await client.subscribeAsync('shared-1/#', { qos: 1 });
    await onB.connect('shared-1', `${PASSWORD}-2`, { clientId: 'other-on-b' });
    // It takes its own session over from node B, across the nodes.
    const stranger = await onA.connect('shared-1', `${PASSWORD}-2`, { clientId: 'other-on-a' });
    await stranger.subscribeAsync('shared-1/#', { qos: 1 });
    const sent = await publishOn(nodeA, a, target.id, "log(JSON.stringify(mqtt.publish(null, 'shared-1/cmd', 'open', {qos: 1}))); mqtt.publish(null, 'shared-1/config', 'interval=60', {qos: 1, retain: true});");
    assert.equal(JSON.parse(sent.logs[0]!).topic, 'shared-1/cmd');
    await waitFor(async () => (client.received.length >= 2 ? true : undefined), 'the messages on node B');
    assert.deepEqual(client.received.map((m) => [m.topic, m.payload, m.qos]).sort(), [['shared-1/cmd', 'open', 1], ['shared-1/config', 'interval=60', 1]]);
    const later = await onB.connect('shared-1', PASSWORD, { clientId: 'later' });
    await later.subscribeAsync('shared-1/config', { qos: 0 });
    await waitFor(async () => (later.received.length > 0 ? true : undefined), 'the retained message on node B');
    assert.deepEqual(later.received[0], { topic: 'shared-1/config', payload: 'interval=60', retain: true, qos: 0 });
    // Account b cannot publish to account a's device from either node.
    for (const node of [nodeA, nodeB]) {
      const crossed = await runScript(node, b.token, `mqtt.publish(${JSON.stringify(target.id)}, 'shared-1/cmd', 'x');`);
      assert.equal(crossed.status, 'failed');
      assert.match(crossed.error ?? '', /no such endpoint|not found/i);
    }
    await sleep(300);
    assert.deepEqual(stranger.received, [], "another service's device of the same key hears nothing");
    assert.equal(client.received.length, 2);
  });

  it('a device connecting to node B takes its session over from node A', async () => {
    const endpoint = await device(a, serviceA, 'mover-1');
    const first = await onA.connect('mover-1', PASSWORD);
    const firstClosed = new Promise<void>((resolve) => first.once('close', () => resolve()));
    const second = await onB.connect('mover-1', PASSWORD, { clientId: 'on-b' });
    await firstClosed;
    await eventsArrive(nodeA, a.token, ['on-connect'], 2, endpoint.id);
    await second.subscribeAsync('mover-1/cmd', { qos: 1 });
    await publishOn(nodeA, a, endpoint.id, "mqtt.publish(null, 'mover-1/cmd', 'here', {qos: 1});");
    await waitFor(async () => (second.received.length > 0 ? true : undefined), 'the message on the new connection');
  });

  it('a persistent session follows its device: subscribed on A, messages queued on A and B while it sleeps, delivered on B, acknowledged once', async () => {
    const endpoint = await device(a, serviceA, 'sleepy-1');
    const first = await onA.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
    await first.subscribeAsync('sleepy-1/cmd', { qos: 1 });
    await first.endAsync();
    await eventsArrive(nodeA, a.token, ['on-disconnect'], 1, endpoint.id);
    // Node B already runs the service's broker: it learns of the subscription from node A's notice.
    await sleep(200);
    await publishOn(nodeB, a, endpoint.id, "mqtt.publish(null, 'sleepy-1/cmd', 'queued-on-b', {qos: 1}); mqtt.subscribe(null, 'sleepy-1/ota/#', {qos: 1});");
    await sleep(200);
    await publishOn(nodeA, a, endpoint.id, "mqtt.publish(null, 'sleepy-1/cmd', 'queued-on-a', {qos: 1}); mqtt.publish(null, 'sleepy-1/ota/url', 'http://fw', {qos: 1});");
    const back = await onB.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
    await waitFor(async () => (back.received.length >= 3 ? true : undefined), 'the queued messages on node B');
    assert.deepEqual(back.received.map((m) => m.payload).sort(), ['http://fw', 'queued-on-a', 'queued-on-b']);
    // While it is connected to B, a message published on A arrives and is acknowledged there.
    await publishOn(nodeA, a, endpoint.id, "mqtt.publish(null, 'sleepy-1/cmd', 'live', {qos: 1});");
    await waitFor(async () => (back.received.some((m) => m.payload === 'live') ? true : undefined), 'the live message');
    await sleep(300);
    await back.endAsync();
    const again = await onA.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
    await sleep(500);
    assert.deepEqual(again.received, [], 'what was acknowledged on B is not sent again on A');
    await again.endAsync();
  });

  it('filters with Redis glob characters match what MQTT matches, no more', async () => {
    const endpoint = await device(a, serviceA, 'glob-1');
    const client = await onB.connect('glob-1', PASSWORD);
    await client.subscribeAsync('glob-1/[ab]/+', { qos: 1 });
    await client.subscribeAsync('glob-1/x*?/#', { qos: 1 });
    await publishOn(nodeA, a, endpoint.id, `
      for (const topic of ['glob-1/a/1', 'glob-1/[ab]/2', 'glob-1/xyz/3', 'glob-1/x*?/4', 'glob-1/x*?']) mqtt.publish(null, topic, topic, {qos: 1});
    `);
    await waitFor(async () => (client.received.length >= 3 ? true : undefined), 'the matching messages');
    await sleep(300);
    assert.deepEqual(client.received.map((m) => m.topic).sort(), ['glob-1/[ab]/2', 'glob-1/x*?', 'glob-1/x*?/4']);
  });
  it('a node that stops tells its MQTT 5 devices to use another server (0x9C); their sessions go on on the other node', async () => {
    const endpoint = await device(a, serviceA, 'leaving-1');
    const client = await onB.connect('leaving-1', PASSWORD, { protocolVersion: 5, clientId: 'leaving', clean: false, properties: { sessionExpiryInterval: 3600 } });
    await client.subscribeAsync('leaving-1/cmd', { qos: 1 });
    const told = new Promise<number | undefined>((resolve) => client.once('disconnect', (packet) => resolve(packet.reasonCode)));
    nodeBStopped = true;
    await nodeB.stop();
    assert.equal(await told, 0x9c, '"use another server"');
    await publishOn(nodeA, a, endpoint.id, "mqtt.publish(null, 'leaving-1/cmd', 'after-move', {qos: 1});");
    const moved = await onA.connect('leaving-1', PASSWORD, { protocolVersion: 5, clientId: 'leaving', clean: false, properties: { sessionExpiryInterval: 3600 } });
    await waitFor(async () => (moved.received.length > 0 ? true : undefined), 'the queued message on node A');
    assert.deepEqual(moved.received.map((m) => m.payload), ['after-move']);
  });

});
