// Issue 22, first shared state: two services on one PostgreSQL database and one Redis (IOTBRIDGE_REDIS_URL)
// share the scripts' cache, rate limits and trigger.wait/signal. A trigger run on node A sets and counts; one run
// on node B sees it; a run waiting on A is woken by a signal on B. Another account sees nothing of it. A wrong
// Redis URL stops the service at start with a message.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { twoNodes } from '../helpers/cluster.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';
import { runScript } from '../helpers/scripts.js';
import { SseClient } from '../helpers/sse.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());

describe('shared script state across two nodes (PostgreSQL + Redis)', { skip }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodeA: TestService;
  let nodeB: TestService;
  let account: TestAccount;
  let other: TestAccount;

  before(async () => {
    ({ database, nodeA, nodeB } = await twoNodes());
    account = await createAccount(nodeA, 'cluster-cache');
    other = await createAccount(nodeA, 'cluster-cache-other');
  });
  after(async () => {
    const redis = new Redis(TEST_REDIS_URL);
    for (const accountId of [account?.accountId, other?.accountId]) {
      if (!accountId) continue;
      const keys = await redis.keys(`iotbridge:cache:${accountId.length}:${accountId}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    redis.disconnect();
    await nodeB?.stop();
    await nodeA?.stop();
    await database?.drop();
  });

  it('a value and a counter written on node A are read and counted on node B', async () => {
    const onA = await runScript(nodeA, account.token, `cache.set('greeting', 'from A'); cache.set2('config', { limit: 7 }); log(cache.incr('visits'));`);
    assert.equal(onA.status, 'success', `${onA.error} line ${onA.line}`);
    assert.deepEqual(onA.logs, ['1']);
    const onB = await runScript(nodeB, account.token, `log(cache.get('greeting'), cache.get2('config').limit, cache.incr('visits'));`);
    assert.equal(onB.status, 'success', `${onB.error} line ${onB.line}`);
    assert.deepEqual(onB.logs, ['from A 7 2']);
    const deleted = await runScript(nodeA, account.token, `log(cache.delete('greeting'));`);
    assert.deepEqual(deleted.logs, ['true']);
    const gone = await runScript(nodeB, account.token, `log(JSON.stringify(cache.get('greeting')));`);
    assert.deepEqual(gone.logs, ['null']);
  });

  it('trigger.wait on node A is woken by trigger.signal on node B; a rate limit counts calls on both', async () => {
    // Events of one endpoint (or of the account) run in order, wherever they are handled: the signal comes from
    // another endpoint's event, or it would wait behind the wait.
    const door = await createEndpoint(nodeB, account.token, { key: 'door-sensor', serviceId: await createService(nodeB, account.token) });
    const waiting = runScript(nodeA, account.token, `log(JSON.stringify(trigger.wait('door', 8000)));`);
    // The waiting run registers its wait; the signal is sent once it has (or it would be kept, which also wakes it).
    await new Promise((resolve) => setTimeout(resolve, 500));
    const signalled = await runScript(nodeB, account.token, `log(trigger.signal('door', { open: true }));`, { endpoint: door.id as string });
    assert.equal(signalled.status, 'success', `${signalled.error} line ${signalled.line}`);
    const woken = await waiting;
    assert.equal(woken.status, 'success', `${woken.error} line ${woken.line}`);
    assert.deepEqual(woken.logs, ['{"open":true}']);
    assert.ok(['0', '1'].includes(signalled.logs[0]!), `woke one, or was kept for it: ${signalled.logs[0]}`);

    const limited = `log(trigger.ratelimit('sms', 3, 3600));`;
    const answers = [];
    for (const node of [nodeA, nodeB, nodeA, nodeB]) answers.push(...(await runScript(node, account.token, limited)).logs);
    assert.deepEqual(answers, ['true', 'true', 'true', 'false'], 'the fourth call in the hour is refused, whichever node');
  });

  it('an event stream on node A shows the events posted on node B, in order, and none of another account', async () => {
    const client = await SseClient.open(`${nodeA.baseUrl}/events/stream?type=feed`, { authorization: `Bearer ${account.token}` });
    assert.ok(client instanceof SseClient);
    const posted: string[] = [];
    for (let n = 0; n < 5; n++) {
      const node = n % 2 === 0 ? nodeB : nodeA;
      const answer = await node.request('POST', '/events', { token: account.token, body: { type: 'feed', data: { n } } });
      assert.equal(answer.status, 202);
      posted.push(answer.body.id as string);
    }
    assert.equal((await nodeB.request('POST', '/events', { token: other.token, body: { type: 'feed', data: { n: 99 } } })).status, 202);
    await client.until((c) => c.events.length >= 5, 'the five events');
    await sleep(300);
    assert.deepEqual(client.events.map((event: { id: string }) => event.id), posted, 'each once, in order, from both nodes');
    // The stream ends when node A stops (SseClient has no close).
  });

  it("another account reads none of it, on either node", async () => {
    for (const node of [nodeA, nodeB]) {
      const theirs = await runScript(node, other.token, `log(JSON.stringify(cache.get('visits')), JSON.stringify(cache.get2('config')));`);
      assert.equal(theirs.status, 'success', `${theirs.error} line ${theirs.line}`);
      assert.deepEqual(theirs.logs, ['null null']);
    }
  });

  it('a Redis that does not answer stops the start with a message naming IOTBRIDGE_REDIS_URL', async () => {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    await assert.rejects(startService('sqlite', { redisUrl: 'redis://127.0.0.1:1' }), /IOTBRIDGE_REDIS_URL/);
  });
});

describe('IOTBRIDGE_REDIS_URL is checked', () => {
  it('refuses a URL that is not redis:// or rediss://', async () => {
    await assert.rejects(startService('sqlite', { redisUrl: 'http://127.0.0.1:6379' }), /IOTBRIDGE_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/);
  });
});
