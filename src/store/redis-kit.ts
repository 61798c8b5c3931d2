/**
 * Every part of the state kept in Redis (docs/cluster.md), for the service to load when `IOTBRIDGE_REDIS_URL` is
 * set: a process without Redis does not load ioredis and mqemitter-redis (~0.2 s of its start).
 */
export { openRedis } from './redis.js';
export { RedisBusNotifier } from './redis-bus-notifier.js';
export { RedisCache } from './redis-cache.js';
export { RedisChangeNotices } from './redis-change-notices.js';
export { RedisMqttEmitters } from './redis-mqtt-emitter.js';
export { RedisNodeCalls } from './redis-node-calls.js';
export { RedisReplies } from './redis-replies.js';
export { RedisSignals } from './redis-signals.js';
