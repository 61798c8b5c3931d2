import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * One Redis pub/sub channel between the nodes of a cluster: messages are "<node>\n<body>", and a node does not
 * hear its own. Delivery is at most once (Redis pub/sub): what uses it must survive a lost message.
 */
export class RedisNodeChannel {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #node: string;
  readonly #logger: Logger;

  private constructor(redis: Redis, channel: string, node: string, logger: Logger) {
    this.#redis = redis;
    this.#subscriber = redis.duplicate();
    this.#channel = channel;
    this.#node = node;
    this.#logger = logger;
  }

  /** Subscribes (on a connection of its own) and calls `heard` with the body of every other node's message. */
  static async open(redis: Redis, channel: string, node: string, logger: Logger, heard: (body: string) => void): Promise<RedisNodeChannel> {
    const opened = new RedisNodeChannel(redis, channel, node, logger);
    opened.#subscriber.on('message', (_channel: string, message: string) => {
      const end = message.indexOf('\n');
      if (end < 0 || message.slice(0, end) === opened.#node) return;
      try {
        heard(message.slice(end + 1));
      } catch (error) {
        logger.error({ err: error, channel }, 'a message from another node could not be handled');
      }
    });
    await opened.#subscriber.subscribe(channel);
    return opened;
  }

  /** `what` names the message in the log line when Redis does not take it. */
  publish(body: string, what: string): void {
    this.#redis.publish(this.#channel, `${this.#node}\n${body}`).catch((error: unknown) => this.#logger.warn({ err: error }, `${what} not sent to the other nodes`));
  }

  close(): void {
    this.#subscriber.disconnect();
  }
}
