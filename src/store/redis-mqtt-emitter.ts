import MQEmitterRedis from 'mqemitter-redis';
import type { Logger } from 'pino';
import { PrefixedEmitter, type TopicEmitter } from '../mqtt/prefixed-emitter.js';
import { REDIS_PREFIX } from './redis.js';

/** What mqemitter-redis keeps of its options, and how it turns a topic into a Redis channel or pattern. */
interface MQEmitterRedisInternals {
  readonly _opts: { readonly regexWildcardOne: RegExp; readonly regexWildcardSome: RegExp };
  _containsWildcard(topic: string): boolean;
  _subTopic(topic: string): string;
}

/**
 * The MQTT brokers' messages between the nodes of a cluster (docs/cluster.md, "MQTT"): one mqemitter-redis per
 * node (its own two connections), each service's broker a prefixed view of it. A publication on one node reaches
 * subscribers on every node; aedes' "$SYS/<broker>/new/clients" on it closes a client id's older connection
 * on another node (a takeover).
 */
export class RedisMqttEmitters {
  readonly #emitter: MQEmitterRedis.MQEmitterRedis;
  readonly #prefix: string;

  /** `url`: IOTBRIDGE_REDIS_URL (mqemitter-redis opens its connections with the ioredis it was built for). */
  constructor(url: string, logger: Logger, prefix = REDIS_PREFIX) {
    this.#emitter = MQEmitterRedis({ connectionString: url });
    this.#prefix = `${prefix}mqtt:`;
    // mqemitter-redis re-emits connection errors; unheard, they would end the process.
    (this.#emitter as unknown as { state: NodeJS.EventEmitter }).state.on('error', (error: Error) => logger.warn({ err: error }, 'MQTT cluster messages: Redis connection problem'));
    const internals = this.#emitter as unknown as MQEmitterRedisInternals;
    // A wildcard filter becomes a Redis glob pattern: the glob's own characters in it are literal MQTT ones.
    internals._subTopic = (topic) => {
      if (!internals._containsWildcard(topic)) return topic;
      const { regexWildcardOne, regexWildcardSome } = internals._opts;
      return topic.replace(/[\\*?[\]]/g, '\\$&').replace(regexWildcardOne, '*').replace(regexWildcardSome, '*');
    };
  }

  /** The emitter of one service's broker. */
  forService(serviceId: string): TopicEmitter {
    return new PrefixedEmitter(this.#emitter, `${this.#prefix}${serviceId}/`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#emitter.close(resolve));
  }
}
