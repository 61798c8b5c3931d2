import type { FastifyReply } from 'fastify';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A route's JSON answer made once per frozen object: the store hands out the rows it holds in memory deep-frozen
 * and replaces them when they change (endpoint-read-cache.ts), so an object's JSON cannot go stale. Serialising a
 * ~300-byte endpoint was ~5 % of an API read's CPU. Objects that are not frozen (a cluster node reads its rows
 * fresh) are serialised each time. The JSON is the route's own serializer's (its response schema), made at the
 * first answer.
 */
export class FrozenJson {
  readonly #made = new WeakMap<object, string>();
  #serialize: ((payload: unknown) => string) | undefined;
  readonly #status: string;
  /** Bound once: Fastify takes it as the reply's serializer. */
  readonly #serializer = (payload: unknown): string => {
    if (payload === null || typeof payload !== 'object') return this.#serialize!(payload);
    let json = this.#made.get(payload);
    if (json === undefined) {
      json = this.#serialize!(payload);
      if (Object.isFrozen(payload)) this.#made.set(payload, json);
    }
    return json;
  };

  constructor(status = '200') {
    this.#status = status;
  }

  /** Has `reply` send `payload` through the memo; returns the payload for the handler to return. */
  answer<T extends object>(reply: FastifyReply, payload: T): T {
    this.#serialize ??= (reply.getSerializationFunction(this.#status) as ((payload: unknown) => string) | undefined) ?? JSON.stringify;
    // With a serializer of its own, Fastify leaves the content type to the route.
    reply.serializer(this.#serializer).type(JSON_TYPE);
    return payload;
  }
}
