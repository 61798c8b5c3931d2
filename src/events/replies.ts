/**
 * Bi-directional events: whoever posts an event can wait for a trigger's `trigger.reply(data)` to it
 * (`POST /events` with `"awaitReply": true`; later, device requests). In this process only.
 */
export class Replies {
  readonly #waiting = new Map<string, (data: unknown) => void>();

  /** Resolves with the first reply to the event, or null after `timeoutMs`. Call before publishing the event. */
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

  /** Delivers a reply; false when nobody waits for one (any more). */
  reply(eventId: string, data: unknown): boolean {
    const deliver = this.#waiting.get(eventId);
    if (!deliver) return false;
    deliver(data);
    return true;
  }
}
