/** A message on the emitter: an aedes packet, or any object with a topic. */
export type EmitterMessage = { readonly topic: string } & Record<string, unknown>;
type Listener = (message: EmitterMessage, done: () => void) => void;

/** The part of an MQEmitter (mqemitter, mqemitter-redis) aedes uses: its `mq` option. */
export interface TopicEmitter {
  on(topic: string, listener: Listener, done?: () => void): unknown;
  removeListener(topic: string, listener: Listener, done?: () => void): unknown;
  emit(message: EmitterMessage, done?: (error?: Error) => void): void;
  close(done: () => void): void;
}

/**
 * One service's broker's view of an emitter the whole node shares (in a cluster, one Redis-backed emitter and
 * its two connections instead of two per service): its topics are prefixed on the way in and stripped on the
 * way out, so services never hear each other. Closing the view removes its listeners, not the shared emitter.
 */
export class PrefixedEmitter implements TopicEmitter {
  readonly #shared: TopicEmitter;
  readonly #prefix: string;
  /** The wrapper of each listener per topic (aedes adds one function under several topics). */
  readonly #wrappers = new Map<Listener, Map<string, Listener>>();

  constructor(shared: TopicEmitter, prefix: string) {
    this.#shared = shared;
    this.#prefix = prefix;
  }

  on(topic: string, listener: Listener, done?: () => void): this {
    const length = this.#prefix.length;
    const wrapper: Listener = (message, next) => listener({ ...message, topic: message.topic.slice(length) }, next);
    let byTopic = this.#wrappers.get(listener);
    if (!byTopic) this.#wrappers.set(listener, (byTopic = new Map<string, Listener>()));
    const previous = byTopic.get(topic);
    if (previous) this.#shared.removeListener(this.#prefix + topic, previous);
    byTopic.set(topic, wrapper);
    this.#shared.on(this.#prefix + topic, wrapper, done);
    return this;
  }

  removeListener(topic: string, listener: Listener, done?: () => void): this {
    const byTopic = this.#wrappers.get(listener);
    const wrapper = byTopic?.get(topic);
    if (!byTopic || !wrapper) {
      if (done) setImmediate(done);
      return this;
    }
    byTopic.delete(topic);
    if (byTopic.size === 0) this.#wrappers.delete(listener);
    this.#shared.removeListener(this.#prefix + topic, wrapper, done);
    return this;
  }

  emit(message: EmitterMessage, done?: (error?: Error) => void): void {
    this.#shared.emit({ ...message, topic: this.#prefix + message.topic }, done);
  }

  close(done: () => void): void {
    for (const [listener, byTopic] of [...this.#wrappers]) for (const topic of [...byTopic.keys()]) this.removeListener(topic, listener);
    setImmediate(done);
  }
}
