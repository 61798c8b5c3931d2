import { randomUUID } from 'node:crypto';
import { deserialize, serialize } from 'node:v8';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { NodeUnreachable, type NodeCalls } from '../devices/device-routing.js';
import { AppError, ERRORS, type ErrorCode } from '../errors.js';
import { REDIS_PREFIX } from './redis.js';

/** How long a node has to say it took a call before the caller counts it gone. */
const TAKE_MS = 2_000;

type Message =
  | { kind: 'call'; id: string; from: string; target: string; method: string; args: unknown[] }
  | { kind: 'taken'; id: string }
  | { kind: 'result'; id: string; value: unknown }
  | { kind: 'error'; id: string; code: string; message: string; details?: unknown };

interface Pending {
  readonly node: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  taken: boolean;
  timers: NodeJS.Timeout[];
}

/**
 * Request and reply between the nodes of a cluster over Redis pub/sub: each node listens on a channel of its own
 * (`iotbridge:calls:<node>`). Messages are v8-serialized, so payloads stay Buffers. A call is first acknowledged
 * ("taken"), then answered; a call nobody takes (no subscriber, or no answer within 2 s) rejects with
 * `NodeUnreachable`, so the caller knows nothing ran there.
 */
export class RedisNodeCalls implements NodeCalls {
  readonly node: string;
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #logger: Logger;
  readonly #handlers = new Map<string, (method: string, args: readonly unknown[]) => Promise<unknown>>();
  readonly #pending = new Map<string, Pending>();

  private constructor(redis: Redis, node: string, logger: Logger) {
    this.#redis = redis;
    this.#subscriber = redis.duplicate();
    this.node = node;
    this.#logger = logger;
  }

  static async open(redis: Redis, node: string, logger: Logger): Promise<RedisNodeCalls> {
    const calls = new RedisNodeCalls(redis, node, logger);
    calls.#subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => calls.#heard(message));
    await calls.#subscriber.subscribe(channelOf(node));
    return calls;
  }

  call(node: string, target: string, method: string, args: readonly unknown[], timeoutMs: number): Promise<unknown> {
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const pending: Pending = { node, resolve, reject, taken: false, timers: [] };
      this.#pending.set(id, pending);
      const fail = (error: Error): void => {
        this.#settle(id);
        reject(error);
      };
      pending.timers.push(setTimeout(() => !pending.taken && fail(new NodeUnreachable(node)), TAKE_MS));
      pending.timers.push(setTimeout(() => fail(new AppError('IOTB_DEVICE_CALL_TIMEOUT')), timeoutMs));
      this.#send(node, { kind: 'call', id, from: this.node, target, method, args: [...args] })
        .then((listeners) => listeners === 0 && !pending.taken && fail(new NodeUnreachable(node)))
        .catch((error: Error) => fail(error));
    });
  }

  serve(target: string, handler: (method: string, args: readonly unknown[]) => Promise<unknown>): void {
    this.#handlers.set(target, handler);
  }

  close(): void {
    this.#subscriber.disconnect();
    for (const [id, pending] of [...this.#pending]) {
      this.#settle(id);
      pending.reject(new NodeUnreachable(pending.node));
    }
  }

  #settle(id: string): Pending | undefined {
    const pending = this.#pending.get(id);
    if (!pending) return undefined;
    for (const timer of pending.timers) clearTimeout(timer);
    this.#pending.delete(id);
    return pending;
  }

  #send(node: string, message: Message): Promise<number> {
    return this.#redis.publish(channelOf(node), serialize(message));
  }

  #heard(raw: Buffer): void {
    let message: Message;
    try {
      message = deserialize(raw) as Message;
    } catch {
      this.#logger.warn('a call between nodes could not be read; it is dropped');
      return;
    }
    if (message.kind === 'call') return void this.#run(message);
    const pending = this.#pending.get(message.id);
    if (!pending) return; // answered after its caller gave up
    if (message.kind === 'taken') pending.taken = true;
    else if (message.kind === 'result') this.#settle(message.id)?.resolve(message.value);
    else this.#settle(message.id)?.reject(asAppError(message));
  }

  async #run(call: Extract<Message, { kind: 'call' }>): Promise<void> {
    const reply = (message: Message): void => void this.#send(call.from, message).catch((error: unknown) => this.#logger.warn({ err: error }, 'a reply to another node was not sent'));
    const handler = this.#handlers.get(call.target);
    reply({ kind: 'taken', id: call.id });
    try {
      if (!handler || !Array.isArray(call.args)) throw new Error(`no ${String(call.target)} channel here`);
      reply({ kind: 'result', id: call.id, value: await handler(call.method, call.args) });
    } catch (error) {
      if (error instanceof AppError) return reply({ kind: 'error', id: call.id, code: error.code, message: error.message, details: error.details });
      this.#logger.error({ err: error, target: call.target, method: call.method, from: call.from }, 'a call from another node failed');
      reply({ kind: 'error', id: call.id, code: 'IOTB_INTERNAL', message: ERRORS.IOTB_INTERNAL.message });
    }
  }
}

function channelOf(node: string): string {
  return `${REDIS_PREFIX}calls:${node}`;
}

function asAppError(message: { code: string; message: string; details?: unknown }): AppError {
  const code = (Object.hasOwn(ERRORS, message.code) ? message.code : 'IOTB_INTERNAL') as ErrorCode;
  return new AppError(code, message.message, message.details);
}
