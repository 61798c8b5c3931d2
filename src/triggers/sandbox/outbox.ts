/**
 * Collects messages for one peer during a turn of the event loop and sends them as one array: under
 * load, a pipe write and the framing of each message cost more than the scripts themselves.
 */
export class Outbox<T> {
  readonly #send: (messages: T[]) => void;
  #messages: T[] = [];

  constructor(send: (messages: T[]) => void) {
    this.#send = send;
  }

  push(message: T): void {
    if (this.#messages.length === 0) setImmediate(() => this.flush());
    this.#messages.push(message);
  }

  flush(): void {
    const messages = this.#messages;
    if (messages.length === 0) return;
    this.#messages = [];
    this.#send(messages);
  }
}
