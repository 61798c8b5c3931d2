import { Redis } from 'ioredis';

/** The Redis the tests use (a local redis-server; .ci/run starts one when none answers). */
export const TEST_REDIS_URL = process.env.IOTBRIDGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Why the Redis tests are skipped here, or false. With `CI` set they never skip: a missing Redis fails them,
 * as a missing PostgreSQL does.
 */
export async function redisSkip(): Promise<string | false> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return false;
  } catch (error) {
    if (process.env.CI) return false; // the tests then fail on the connection, saying why
    return `Redis not reachable at ${TEST_REDIS_URL} (${(error as Error).message}); set IOTBRIDGE_TEST_REDIS_URL`;
  } finally {
    redis.disconnect();
  }
}
