/**
 * Bi-directional events: whoever posts an event can wait for a trigger's `trigger.reply(data)` to it
 * (`POST /events` with `"awaitReply": true`, CoAP requests with `replyTimeoutMs`, `exec.sync`). An interface: in a
 * cluster the reply may be given on another node than the one waiting (src/store/redis-replies.ts).
 */
export interface Replies {
  /** Resolves with the first reply to the event, or null after `timeoutMs`. Call before publishing the event. */
  expect(eventId: string, timeoutMs: number): Promise<unknown>;
  /** Delivers a reply → false when nobody waits for one (any more). */
  reply(eventId: string, data: unknown): boolean | Promise<boolean>;
}

/** Replies waited for in this process. */
export class LocalReplies implements Replies {
  readonly #waiting = new Map<string, (data: unknown) => void>();

  expect(eventId: string, timeoutMs: number): Promise<unknown> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(eventId);
        resolve(null);
      }, timeoutMs);
      this.#waiting.set(eventId, (data) => {
        clearTimeout(timer);
        this.#waiting.delete(eventId);
        resolve(data);
      });
    });
  }

  reply(eventId: string, data: unknown): boolean {
    const deliver = this.#waiting.get(eventId);
    if (!deliver) return false;
    deliver(data);
    return true;
  }

  /** Whether a reply to the event is waited for in this process. */
  waits(eventId: string): boolean {
    return this.#waiting.has(eventId);
  }
}
