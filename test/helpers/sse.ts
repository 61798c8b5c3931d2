/** One Server-Sent Events message as a client sees it (WHATWG HTML 9.2.6 "Interpreting an event stream"). */
export interface SseMessage {
  readonly event: string;
  readonly data: string;
  /** The last event id in effect when the message was dispatched. */
  readonly id: string | undefined;
}

/** Parses `text/event-stream` text as it comes, chunk by chunk (any split), per WHATWG HTML 9.2.6. */
export class SseParser {
  readonly messages: SseMessage[] = [];
  readonly comments: string[] = [];
  retry: number | undefined;
  #buffer = '';
  #event = '';
  #data: string[] = [];
  #lastId: string | undefined;

  push(text: string): void {
    this.#buffer += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      // A lone \r at the end may be the first half of \r\n.
      if (!match || (match[0] === '\r' && match.index === this.#buffer.length - 1)) return;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      this.#line(line);
    }
  }

  #line(line: string): void {
    if (line === '') {
      if (this.#data.length > 0) this.messages.push({ event: this.#event || 'message', data: this.#data.join('\n'), id: this.#lastId });
      this.#event = '';
      this.#data = [];
      return;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.#lastId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retry = Number(value);
  }
}

/** A streaming `fetch` of an event stream: collects its messages as they arrive. */
export class SseClient {
  readonly response: Response;
  readonly parser = new SseParser();
  /** Resolves when the server ends the stream. */
  readonly done: Promise<void>;
  #ended = false;
  #notify: (() => void) | undefined;

  private constructor(response: Response) {
    this.response = response;
    this.done = this.#read();
  }

  /**
   * Opens the stream; a non-200 answer is returned as parsed JSON instead. There is no close(): an aborted
   * fetch leaves undici opening a spare connection that holds up the service's stop (see event-stream.test.ts);
   * streams end when the service stops.
   */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseClient | { status: number; body: any; headers: Headers }> {
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
    if (response.status !== 200) return { status: response.status, headers: response.headers, body: JSON.parse(await response.text()) };
    return new SseClient(response);
  }

  get messages(): readonly SseMessage[] {
    return this.parser.messages;
  }

  /** The `event: event` messages' data, parsed. */
  get events(): any[] {
    return this.messages.filter((m) => m.event === 'event').map((m) => JSON.parse(m.data));
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Waits until `check` holds over the messages so far; fails if the stream ends first or after `timeoutMs`. */
  async until(check: (client: SseClient) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this)) {
      if (this.#ended) throw new Error(`the stream ended before ${what}: ${JSON.stringify(this.messages.slice(-5))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}: ${this.messages.length} messages`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#notify = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Waits for at least `count` `event: event` messages; returns the first `count`, parsed. */
  async take(count: number): Promise<any[]> {
    await this.until((client) => client.events.length >= count, `${count} events`);
    return this.events.slice(0, count);
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.response.body as unknown as AsyncIterable<Uint8Array>) {
        this.parser.push(decoder.decode(chunk, { stream: true }));
        this.#wake();
      }
    } catch {
      // The connection was cut.
    } finally {
      this.#ended = true;
      this.#wake();
    }
  }

  #wake(): void {
    const notify = this.#notify;
    this.#notify = undefined;
    notify?.();
  }
}
