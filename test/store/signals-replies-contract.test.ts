// The contracts of `trigger.wait/signal` and of event replies, run against every implementation: in this process,
// and in Redis with two instances on connections of their own standing for two nodes of a cluster (a wait on one,
// the signal or reply on the other).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { LocalReplies, type Replies } from '../../src/events/replies.js';
import { RedisReplies } from '../../src/store/redis-replies.js';
import { RedisSignals } from '../../src/store/redis-signals.js';
import { LocalSignals, type Signals } from '../../src/triggers/signals.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';

const skipRedis = await redisSkip();
const PREFIX = `iotbridge-test-${randomUUID()}:`;

interface Nodes {
  readonly signals: [Signals, Signals];
  readonly replies: [Replies, Replies];
  close(): Promise<void>;
}

const implementations: { name: string; skip: string | false; make: () => Promise<Nodes> }[] = [
  {
    name: 'in this process',
    skip: false,
    make: async () => {
      const signals = new LocalSignals({ keepMs: 60_000 });
      const replies = new LocalReplies();
      return { signals: [signals, signals], replies: [replies, replies], close: async () => {} };
    },
  },
  {
    name: 'Redis, two nodes',
    skip: skipRedis,
    make: async () => {
      const connections = [new Redis(TEST_REDIS_URL), new Redis(TEST_REDIS_URL)];
      const signals = await Promise.all(connections.map((redis) => RedisSignals.open(redis, { prefix: PREFIX })));
      const replies = await Promise.all(connections.map((redis) => RedisReplies.open(redis, PREFIX)));
      return {
        signals: [signals[0]!, signals[1]!],
        replies: [replies[0]!, replies[1]!],
        close: async () => {
          const keys = await connections[0]!.keys(`${PREFIX}*`);
          if (keys.length > 0) await connections[0]!.del(...keys);
          for (const each of [...signals, ...replies]) each.close();
          for (const redis of connections) redis.disconnect();
        },
      };
    },
  },
];

/** Lets a wait begun without awaiting reach its store before the next step. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

for (const { name, skip, make } of implementations) {
  describe(`signals and replies contract: ${name}`, { skip }, () => {
    let nodes: Nodes;
    before(async () => {
      nodes = await make();
    });
    after(async () => {
      await nodes?.close();
    });

    it('a wait on one node is woken by a signal on the other, with its value', async () => {
      const [a, b] = nodes.signals;
      const waited = a.wait('acc-1', 'ready', 5000);
      await settle();
      assert.equal(await b.signal('acc-1', 'ready', { level: 3, tags: ['x'] }), 1);
      assert.deepEqual(await waited, { level: 3, tags: ['x'] });
    });

    it('every wait registered when the signal comes wakes, on both nodes', async () => {
      const [a, b] = nodes.signals;
      const waits = [a.wait('acc-1', 'go', 5000), b.wait('acc-1', 'go', 5000), b.wait('acc-1', 'go', 5000)];
      await settle();
      assert.equal(await a.signal('acc-1', 'go', 'now'), 3);
      assert.deepEqual(await Promise.all(waits), ['now', 'now', 'now']);
    });

    it('a signal nobody waits for is kept for the next wait only', async () => {
      const [a, b] = nodes.signals;
      assert.equal(await a.signal('acc-2', 'early', 42), 0);
      assert.equal(await b.wait('acc-2', 'early', 1000), 42);
      assert.equal(await b.wait('acc-2', 'early', 200), null, 'consumed by the first wait');
      assert.equal(await a.signal('acc-2', 'null-value', null), 0);
      assert.equal(await b.wait('acc-2', 'null-value', 1000), null);
    });

    it('a wait that timed out is not counted: a later signal is kept, not lost', async () => {
      const [a, b] = nodes.signals;
      assert.equal(await a.wait('acc-3', 'late', 150), null);
      assert.equal(await b.signal('acc-3', 'late', 'kept'), 0);
      assert.equal(await a.wait('acc-3', 'late', 1000), 'kept');
    });

    it('reset forgets a kept signal', async () => {
      const [a, b] = nodes.signals;
      await a.signal('acc-4', 'x', 1);
      assert.equal(await b.reset('acc-4', 'x'), true);
      assert.equal(await b.reset('acc-4', 'x'), false);
      assert.equal(await a.wait('acc-4', 'x', 200), null);
    });

    it("never wakes or hands over another account's signal", async () => {
      const [a, b] = nodes.signals;
      const mine = a.wait('a', 'b:c', 400);
      await settle();
      assert.equal(await b.signal('a:b', 'c', 'theirs'), 0, 'another account, kept for its own waits');
      assert.equal(await b.signal('acc-other', 'b:c', 'theirs'), 0);
      assert.equal(await mine, null);
      assert.equal(await a.wait('a:b', 'c', 1000), 'theirs');
    });

    it('a reply given on the other node reaches the wait, once', async () => {
      const [a, b] = nodes.replies;
      const waited = a.expect('event-1', 5000);
      await settle();
      assert.equal(await b.reply('event-1', { answer: 42 }), true);
      assert.deepEqual(await waited, { answer: 42 });
      assert.equal(await b.reply('event-1', 'again'), false, 'a second reply finds nobody waiting');
    });

    it('a reply nobody waits for, or after the wait ended, is refused; the wait ends with null', async () => {
      const [a, b] = nodes.replies;
      assert.equal(await b.reply('event-nobody', 1), false);
      assert.equal(await a.expect('event-2', 150), null);
      await settle();
      assert.equal(await b.reply('event-2', 'late'), false);
    });

    it('a reply on the node that waits is delivered as it is (not only JSON)', async () => {
      const [a] = nodes.replies;
      const marker = Symbol('no reply');
      const waited = a.expect('event-3', 5000);
      assert.equal(await a.reply('event-3', marker), true);
      assert.equal(await waited, marker);
    });
  });
}
