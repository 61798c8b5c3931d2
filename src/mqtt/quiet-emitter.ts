import type { EmitterMessage, TopicEmitter } from './prefixed-emitter.js';

type Listener = Parameters<TopicEmitter['on']>[1];

/**
 * A broker's emitter that does not look for listeners when none can match. Most device services only publish
 * telemetry and nobody subscribes: the broker's only listeners are its own, under `$SYS/…`, and yet every
 * publication had its topic split into words and walked through the matcher (~1 % of the service's main
 * thread in bench:mqtt's finished round). A filter that starts with `$` literally matches only topics whose
 * first level is that same word, so while every filter does, a publication to a topic not starting with `$`
 * reaches nobody and is done at once.
 *
 * One node's brokers only: in a cluster the listeners of other nodes are not known here (PrefixedEmitter).
 */
export class QuietEmitter implements TopicEmitter {
  readonly #inner: TopicEmitter;
  /** How often each listener was added under each filter not starting with `$` (the matcher keeps duplicates). */
  readonly #plain = new Map<string, Map<Listener, number>>();
  #plainCount = 0;
  #closed = false;

  constructor(inner: TopicEmitter) {
    this.#inner = inner;
  }

  on(topic: string, listener: Listener, done?: () => void): this {
    if (!topic.startsWith('$')) {
      let listeners = this.#plain.get(topic);
      if (!listeners) this.#plain.set(topic, (listeners = new Map<Listener, number>()));
      listeners.set(listener, (listeners.get(listener) ?? 0) + 1);
      this.#plainCount++;
    }
    this.#inner.on(topic, listener, done);
    return this;
  }

  /**
   * Counted out at once, though mqemitter removes the listener a turn later: a publication meanwhile may then
   * skip a listener that asked to go, which MQTT allows.
   */
  removeListener(topic: string, listener: Listener, done?: () => void): this {
    const listeners = this.#plain.get(topic);
    const count = listeners?.get(listener);
    if (listeners && count !== undefined) {
      if (count > 1) listeners.set(listener, count - 1);
      else listeners.delete(listener);
      if (listeners.size === 0) this.#plain.delete(topic);
      this.#plainCount--;
    }
    this.#inner.removeListener(topic, listener, done);
    return this;
  }

  emit(message: EmitterMessage, done?: (error?: Error) => void): void {
    // As mqemitter finishes a message nobody listens to: at once.
    if (this.#plainCount === 0 && !this.#closed && !message.topic.startsWith('$')) done?.();
    else this.#inner.emit(message, done);
  }

  close(done: () => void): void {
    this.#closed = true;
    this.#inner.close(done);
  }
}
