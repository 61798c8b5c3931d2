// Issue 22, graceful drain: two nodes on one PostgreSQL database and one Redis, API clients and an MQTT 5 device on
// the node that is stopped with SIGTERM mid-stream. The node stops accepting (/ready 503, listeners closed), tells
// its MQTT 5 devices to use another server (DISCONNECT 0x9C), finishes the events in flight and gives its shards to
// the survivor, which runs the rest: every accepted event is handled exactly once (a drain is not a crash).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt from 'mqtt';
import { clusterSettled, forgetCache, handledCounts, spawnedNodes } from '../helpers/cluster.js';
import { FuzzService, fuzzAccount, fuzzService } from '../helpers/fuzz.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';
import { DIALECTS } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());
const PASSWORD = 'drain-device-password';
/** Counted in Redis whichever node runs it; in flight for a while, so the drain finds events being handled. */
const SCRIPT = `cache.incr(event.type === 'mqtt-publish' ? 'm:' + event.data.text : 'h:' + event.id, 1, 3600); trigger.wait('drain-pause', 20);`;

describe('a cluster node stopped with SIGTERM drains: every accepted event handled once, MQTT devices sent on (PostgreSQL + Redis)', { skip, timeout: 180_000 }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodes: FuzzService[] = [];
  let accountId: string;
  let token: string;

  before(async () => {
    ({ database, nodes } = await spawnedNodes(['drain-1', 'drain-2'], { IOTBRIDGE_SCRIPT_WORKERS: '2' }));
    ({ accountId, token } = await fuzzAccount(nodes[0]!, 'cluster-drain'));
  });
  after(async () => {
    await forgetCache(TEST_REDIS_URL, accountId);
    for (const node of nodes) if (node.alive) await node.stop();
    await database?.drop();
  });

  it('stops accepting, finishes what it accepted, hands its shards and devices to the other node', async (t) => {
    const [survivor, draining] = [nodes[0]!, nodes[1]!];
    const serviceId = await fuzzService(survivor, token, { name: 'drain devices', type: 'mqtt' });
    const items = Array.from({ length: 10 }, (_, i) => ({ key: `d-${i}`, serviceId, credentials: { password: PASSWORD } }));
    const bulk = await survivor.request('POST', '/endpoints/bulk', { token, body: { items } });
    const endpointIds = (bulk.json.items as { endpoint: { id: string } }[]).map((item) => item.endpoint.id);
    assert.equal((await survivor.request('POST', '/triggers', { token, body: { name: 'count', events: ['reading', 'mqtt-publish'], script: SCRIPT } })).status, 201);

    const accepted: string[] = [];
    let stop = false;
    let reason: number | undefined;
    let throughSurvivor = 0;
    // An MQTT 5 device on the draining node; told to use another server, it connects to the survivor and goes on.
    const device = (async () => {
      let node = draining;
      for (let i = 0; !stop; ) {
        const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${node.ports.mqtt}`, { username: 'd-0', password: PASSWORD, clientId: 'drainer', protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5000 });
        const moved = new Promise<void>((resolve) => {
          client.once('disconnect', (packet) => (reason = packet.reasonCode));
          client.once('close', () => resolve());
        });
        for (; !stop; i++) {
          const text = `q-${i}`;
          const acked = await Promise.race([client.publishAsync('d-0/reading', text, { qos: 1 }).then(() => true, () => false), moved.then(() => false)]);
          // Not acknowledged: not counted as accepted. The next message has a new text, so a resend does not look
          // like an event handled twice (the node may have stored it before it closed the connection).
          if (!acked) {
            i++;
            break;
          }
          accepted.push(`m:${text}`);
          if (node === survivor) throughSurvivor++;
          await sleep(10);
        }
        client.end(true);
        node = survivor;
      }
    })();
    // API clients on both nodes; those of the draining node move to the survivor once it refuses them.
    const posters = [0, 1, 2, 3].map(async (worker) => {
      for (let i = worker; !stop; i += 4) {
        const node = worker % 2 === 1 && draining.alive ? draining : survivor;
        const posted = await node.request('POST', '/events', { token, body: { type: 'reading', endpoint: endpointIds[i % endpointIds.length], data: { n: i } } }).catch(() => undefined);
        if (posted?.status === 202) accepted.push(`h:${posted.json.id as string}`);
      }
    });
    await sleep(2000);
    const beforeStop = accepted.length;
    await draining.stop(); // SIGTERM; the helper would SIGKILL after 5 s
    await sleep(2000);
    stop = true;
    await Promise.all([device, ...posters]);

    const counts = await handledCounts(TEST_REDIS_URL, accountId, accepted, 60_000);
    const lost = accepted.filter((_, i) => counts[i] === 0);
    const twice = counts.filter((count) => count > 1).length;
    if (twice > 0) t.diagnostic(`handled twice: ${accepted.filter((_, i) => counts[i]! > 1).join(', ')}`);
    t.diagnostic(`accepted ${accepted.length} (${beforeStop} before SIGTERM); lost ${lost.length}, handled twice ${twice}; MQTT 5 DISCONNECT reason ${reason}, then ${throughSurvivor} messages through the survivor`);
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} accepted events were never handled`);
    assert.equal(twice, 0, 'a drained node finishes what it runs and saves its cursors: nothing runs twice');
    assert.equal(reason, 0x9c, 'MQTT 5: use another server');
    assert.ok(throughSurvivor > 0, 'the device went on through the survivor');
    assert.deepEqual(await clusterSettled([survivor]), [64], 'the survivor holds every shard');
  });
});
