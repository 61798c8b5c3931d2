// The scripts' cache contract, run against every implementation: in this process (MemoryCache) and in Redis
// (RedisCache, what a cluster's nodes share). Like aedes' persistence suite: one set of cases, each store.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisCache } from '../../src/store/redis-cache.js';
import { MemoryCache, type Cache } from '../../src/triggers/cache.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';

const skipRedis = await redisSkip();
/** Keys of this run only, removed at the end. */
const PREFIX = `iotbridge-test-${randomUUID()}:`;
let redis: Redis | undefined;

const implementations: { name: string; skip: string | false; make: () => Cache }[] = [
  { name: 'MemoryCache', skip: false, make: () => new MemoryCache() },
  { name: 'RedisCache', skip: skipRedis, make: () => new RedisCache(redis!, PREFIX) },
];

for (const { name, skip, make } of implementations) {
  describe(`cache contract: ${name}`, { skip }, () => {
    let cache: Cache;
    before(async () => {
      if (name === 'RedisCache') redis ??= new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      cache = make();
    });

    it('gets null for a missing key, then what was set; set replaces', async () => {
      assert.equal(await cache.get('acc-1', 'k'), null);
      await cache.set('acc-1', 'k', 'v1');
      assert.equal(await cache.get('acc-1', 'k'), 'v1');
      await cache.set('acc-1', 'k', 'v2');
      assert.equal(await cache.get('acc-1', 'k'), 'v2');
      await cache.set('acc-1', 'empty', '');
      assert.equal(await cache.get('acc-1', 'empty'), '', 'an empty string is a value, not a miss');
    });

    it("never reads or changes another account's entry, whatever the key", async () => {
      // "a" + "b:c" and "a:b" + "c" must be different entries.
      await cache.set('a', 'b:c', 'first');
      await cache.set('a:b', 'c', 'second');
      assert.equal(await cache.get('a', 'b:c'), 'first');
      assert.equal(await cache.get('a:b', 'c'), 'second');
      await cache.set('acc-x', 'shared-name', 'x');
      assert.equal(await cache.get('acc-y', 'shared-name'), null);
      assert.equal(await cache.delete('acc-y', 'shared-name'), false);
      assert.equal(await cache.incr('acc-y', 'shared-name', 5), 5);
      assert.equal(await cache.get('acc-x', 'shared-name'), 'x');
    });

    it('incr: from 0 when missing or not a number, keeps integers exact, adds fractions', async () => {
      assert.equal(await cache.incr('acc-2', 'n', 1), 1);
      assert.equal(await cache.incr('acc-2', 'n', 10), 11);
      assert.equal(await cache.incr('acc-2', 'n', -12), -1);
      await cache.set('acc-2', 'word', 'not a number');
      assert.equal(await cache.incr('acc-2', 'word', 3), 3);
      await cache.set('acc-2', 'big', String(Number.MAX_SAFE_INTEGER - 1));
      assert.equal(await cache.incr('acc-2', 'big', 1), Number.MAX_SAFE_INTEGER);
      assert.equal(await cache.incr('acc-2', 'half', 0.5), 0.5);
      assert.equal(await cache.incr('acc-2', 'half', 0.25), 0.75);
      assert.equal(await cache.get('acc-2', 'half'), '0.75');
    });

    it('incr is atomic: 200 at once add up', async () => {
      await Promise.all(Array.from({ length: 200 }, () => cache.incr('acc-3', 'hits', 1)));
      assert.equal(await cache.get('acc-3', 'hits'), '200');
    });

    it('delete says whether there was an entry', async () => {
      await cache.set('acc-4', 'k', 'v');
      assert.equal(await cache.delete('acc-4', 'k'), true);
      assert.equal(await cache.delete('acc-4', 'k'), false);
      assert.equal(await cache.get('acc-4', 'k'), null);
    });

    it('entries expire after their TTL; incr keeps the remaining lifetime unless given one', async () => {
      await cache.set('acc-5', 'short', 'v', 1);
      await cache.set('acc-5', 'counter', '1', 1);
      assert.equal(await cache.incr('acc-5', 'counter', 1), 2, 'no TTL given: the entry keeps its 1 s');
      assert.equal(await cache.incr('acc-5', 'renewed', 1, 1), 1);
      assert.equal(await cache.incr('acc-5', 'renewed', 1, 60), 2, 'a TTL given: the entry now lives 60 s');
      await cache.set('acc-5', 'long', 'v');
      await sleep(1300);
      assert.equal(await cache.get('acc-5', 'short'), null);
      assert.equal(await cache.get('acc-5', 'counter'), null);
      assert.equal(await cache.get('acc-5', 'renewed'), '2');
      assert.equal(await cache.get('acc-5', 'long'), 'v');
    });
  });
}

describe('RedisCache specifics', { skip: skipRedis }, () => {
  after(async () => {
    if (!redis) return;
    // Only this run's keys.
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('clamps TTLs to 1 s … 1 day, as the in-process cache', async () => {
    redis ??= new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    const cache = new RedisCache(redis, PREFIX);
    await cache.set('acc-6', 'forever', 'v', 10 ** 9);
    await cache.set('acc-6', 'zero', 'v', 0);
    await cache.set('acc-6', 'default', 'v');
    const ttl = async (key: string) => redis!.ttl(`${PREFIX}cache:5:acc-6:${key}`);
    assert.equal(await ttl('forever'), 86_400);
    assert.equal(await ttl('default'), 86_400);
    assert.ok((await ttl('zero')) <= 1, 'at least 1 s, never "no expiry"');
  });
});
