import type { Endpoints } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { createEvent, type Event } from './event.js';
import type { EventBus } from './event-bus.js';
import type { Replies } from './replies.js';

export interface CustomEventInput {
  readonly type: string;
  /** Endpoint id or `k.<key>`; the event then belongs to that endpoint and its service. */
  readonly endpoint?: string | undefined;
  readonly data?: unknown;
}

/** Events posted by applications (`POST /events`) and, later, by scripts: always as the acting account. */
export class Events {
  readonly #bus: EventBus;
  readonly #endpoints: Endpoints;
  readonly #replies: Replies;

  constructor(bus: EventBus, endpoints: Endpoints, replies: Replies) {
    this.#bus = bus;
    this.#endpoints = endpoints;
    this.#replies = replies;
  }

  /** Accepts a custom event; resolves once it is durable (it will reach every trigger, even across a restart). */
  async post(scope: Scope, input: CustomEventInput): Promise<Event> {
    const event = await this.build(scope, input);
    await this.#bus.publish([event]);
    return event;
  }

  /** Publishes an event made by the platform (scripts' `exec`); resolves once it is durable. */
  publish(event: Event): Promise<void> {
    return this.#bus.publish([event]);
  }

  /** Posts an event and waits up to `timeoutMs` for a trigger's `trigger.reply(data)` to it; the reply is null when none came. */
  async request(scope: Scope, input: CustomEventInput, timeoutMs: number): Promise<{ event: Event; reply: unknown }> {
    const event = await this.build(scope, input);
    const reply = this.#replies.expect(event.id, timeoutMs);
    await this.#bus.publish([event]);
    return { event, reply: await reply };
  }

  /** The event `post` would publish, without publishing it (test runs of a trigger). */
  async build(scope: Scope, input: CustomEventInput): Promise<Event> {
    const endpoint = input.endpoint === undefined ? undefined : await this.#endpoints.get(scope, input.endpoint);
    return createEvent({
      type: input.type,
      accountId: scope.accountId,
      serviceId: endpoint?.serviceId,
      endpointId: endpoint?.id,
      endpointKey: endpoint?.key,
      data: input.data,
    });
  }
}
