import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** Keys this installation writes start with this, so a Redis can be shared with other software. */
export const REDIS_PREFIX = 'iotbridge:';

/**
 * The connection to `IOTBRIDGE_REDIS_URL`, checked at start (a wrong URL stops the service with a message rather
 * than failing later inside a script). ioredis reconnects by itself afterwards; commands issued while it is away
 * fail after a few retries instead of waiting forever, so a script's `cache.get` gets an error, not a hang.
 */
export async function openRedis(url: string, logger: Logger): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, connectTimeout: 5000, enableOfflineQueue: true });
  redis.on('error', (error: Error) => logger.warn({ err: error }, 'Redis connection problem'));
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    throw new Error(`Redis at IOTBRIDGE_REDIS_URL could not be reached: ${(error as Error).message}`);
  }
  return redis;
}
