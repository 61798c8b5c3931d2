import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Config } from '../../src/config.js';
import { FuzzService } from './fuzz.js';
import { TEST_REDIS_URL } from './redis.js';
import { startService, throwAwayPostgres, type TestService } from './service.js';

/** Something answering HTTP on a base URL: a service started in this process or a spawned one. */
interface Node {
  readonly baseUrl: string;
}

/**
 * Waits until the nodes have shared out the event bus's 64 shards (each `/ready` says its share): a node that
 * joins or leaves moves shards, and handling pauses on the nodes whose shares change until their in-flight events end.
 */
export async function clusterSettled(nodes: readonly Node[], timeoutMs = 30_000): Promise<number[]> {
  // Each node takes up to ceil(64 / n); the last one gets what is left.
  const fair = 64 - (nodes.length - 1) * Math.ceil(64 / nodes.length);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const shares = await Promise.all(
      nodes.map(async (node) => {
        const answer = await fetch(`${node.baseUrl}/ready`).catch(() => undefined);
        const body = answer?.ok ? ((await answer.json()) as { shards?: number; liveNodes?: number }) : undefined;
        return body?.liveNodes === nodes.length ? (body.shards ?? 0) : -1;
      }),
    );
    if (shares.every((share) => share >= fair) && shares.reduce((a, b) => a + b, 0) === 64) return shares;
    if (Date.now() > deadline) throw new Error(`the nodes did not share the bus's shards: ${shares.join(', ')}`);
    await sleep(200);
  }
}

/** The key a script's `cache.incr(mark)` writes in Redis for the account (src/store/redis-cache.ts). */
function cacheKey(accountId: string, mark: string): string {
  return `iotbridge:cache:${accountId.length}:${accountId}:${mark}`;
}

/**
 * How many times each mark was counted by the account's trigger (`cache.incr(mark)`), read from Redis until every
 * one is counted or `timeoutMs` passes: the kill and drain tests' "lost" (0) and "handled twice" (> 1).
 */
export async function handledCounts(redisUrl: string, accountId: string, marks: readonly string[], timeoutMs: number): Promise<number[]> {
  const redis = new Redis(redisUrl);
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const counts: number[] = [];
      for (let i = 0; i < marks.length; i += 500) {
        const values = await redis.mget(marks.slice(i, i + 500).map((mark) => cacheKey(accountId, mark)));
        counts.push(...values.map((value) => Number(value ?? 0)));
      }
      if (counts.every((count) => count > 0) || Date.now() > deadline) return counts;
      await sleep(300);
    }
  } finally {
    redis.disconnect();
  }
}

/** Deletes what the account's scripts left in Redis's cache. */
export async function forgetCache(redisUrl: string, accountId: string | undefined): Promise<void> {
  if (!accountId) return;
  const redis = new Redis(redisUrl);
  try {
    const keys = await redis.keys(cacheKey(accountId, '*'));
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/** Two nodes started in this process on a throw-away PostgreSQL database and the test Redis, the bus shared out. */
export async function twoNodes(overrides: Partial<Config> = {}): Promise<{ database: { url: string; drop: () => Promise<void> }; nodeA: TestService; nodeB: TestService }> {
  const database = await throwAwayPostgres();
  const nodeA = await startService('sqlite', { databaseUrl: database.url, redisUrl: TEST_REDIS_URL, ...overrides });
  const nodeB = await startService('sqlite', { databaseUrl: database.url, redisUrl: TEST_REDIS_URL, ...overrides });
  await clusterSettled([nodeA, nodeB]);
  return { database, nodeA, nodeB };
}

/**
 * Nodes in processes of their own (so one can be killed) on a throw-away PostgreSQL database and the test Redis,
 * started one after another (the first applies the migrations), the bus shared out.
 */
export async function spawnedNodes(names: readonly string[], env: Record<string, string> = {}): Promise<{ database: { url: string; drop: () => Promise<void> }; nodes: FuzzService[] }> {
  const database = await throwAwayPostgres();
  const nodes: FuzzService[] = [];
  for (const name of names) nodes.push(await FuzzService.start({ IOTBRIDGE_DATABASE_URL: database.url, IOTBRIDGE_REDIS_URL: TEST_REDIS_URL, IOTBRIDGE_NODE_ID: name, ...env }));
  await clusterSettled(nodes);
  return { database, nodes };
}
