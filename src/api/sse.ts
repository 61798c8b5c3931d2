import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { EventStream } from '../events/event-streams.js';

/** How long a client waits before it reconnects (the stream's `retry:` field, WHATWG HTML 9.2.6). */
export const SSE_RETRY_MS = 5000;
/** A comment this often keeps proxies and load balancers from closing a quiet stream. */
export const SSE_KEEP_ALIVE_MS = 15_000;
/**
 * How long a client has to read the last message before its connection is cut: after an overflow (it may be
 * catching up), and at a shutdown (which waits for it).
 */
const OVERFLOW_LINGER_MS = 10_000;
const SHUTDOWN_LINGER_MS = 1000;

/** One SSE message (WHATWG HTML 9.2.5): `data` must be one line (JSON text is). */
export function sseMessage(event: string, data: string, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`;
}

/**
 * Serves one event stream on a hijacked reply as `text/event-stream`: replayed and live events as `event: event`
 * messages whose `id:` is the event id, a `gap` message first when the replay left events out, an `overflow`
 * message last when the client fell behind, and a comment every {@link SSE_KEEP_ALIVE_MS}. Writes follow the
 * socket: an event is taken from the stream only when the response has room, so what a slow client has not
 * read waits in the stream's bounded queue, not in the response. Closes the stream when the client goes.
 */
export class SseConnection {
  readonly #stream: EventStream;
  readonly #res: ServerResponse;
  readonly #log: FastifyBaseLogger;
  readonly #keepAlive: NodeJS.Timeout;
  readonly #closed: Promise<void>;
  #ending = false;
  #linger: NodeJS.Timeout | undefined;

  constructor(reply: FastifyReply, stream: EventStream, onClose: (connection: SseConnection) => void) {
    this.#stream = stream;
    this.#log = reply.log;
    reply.hijack();
    const res = reply.raw;
    this.#res = res;
    this.#closed = new Promise((resolve) => {
      const closed = () => {
        clearInterval(this.#keepAlive);
        clearTimeout(this.#linger);
        stream.close();
        onClose(this);
        resolve();
      };
      // The client may have gone while the stream was being set up, its close event already past.
      if (res.destroyed || !res.socket || res.socket.destroyed) setImmediate(closed);
      else res.once('close', closed);
    });
    res.on('error', () => undefined);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      // nginx would otherwise hold the messages back in its buffer.
      'x-accel-buffering': 'no',
    });
    res.write(`retry: ${SSE_RETRY_MS}\n: connected\n\n`);
    if (stream.gap) res.write(sseMessage('gap', JSON.stringify(stream.gap)));
    this.#keepAlive = setInterval(() => {
      if (!res.writableNeedDrain && !this.#ending) res.write(': keep-alive\n\n');
    }, SSE_KEEP_ALIVE_MS);
    this.#keepAlive.unref();
    void this.#pump();
  }

  /** Ends the stream for a server shutdown: resolves once the response is done (cut after a second). */
  shutdown(): Promise<void> {
    this.#stream.close();
    this.#end(SHUTDOWN_LINGER_MS);
    return this.#closed;
  }

  async #pump(): Promise<void> {
    const res = this.#res;
    for (;;) {
      const event = await this.#stream.next();
      if (!event || this.#ending) break;
      if (!res.write(sseMessage('event', event.json, event.id)) && !(await this.#drained())) break;
    }
    if (this.#stream.ended === 'overflow' && !this.#ending) {
      this.#log.info({ accountId: this.#stream.accountId }, 'event stream cut off: its client read too slowly');
      this.#end(OVERFLOW_LINGER_MS, sseMessage('overflow', JSON.stringify({ message: 'The client fell too far behind; reconnect with Last-Event-ID to replay what it missed' })));
    }
  }

  /** True once the response has room again; false when the connection closed first. */
  #drained(): Promise<boolean> {
    const res = this.#res;
    if (res.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const settle = (ok: boolean) => () => {
        res.off('drain', onDrain).off('close', onClose);
        resolve(ok);
      };
      const onDrain = settle(true);
      const onClose = settle(false);
      res.once('drain', onDrain).once('close', onClose);
    });
  }

  #end(lingerMs: number, last?: string): void {
    const res = this.#res;
    if (this.#ending) {
      // A shutdown while an overflow's last message waits: cut sooner.
      if (lingerMs === SHUTDOWN_LINGER_MS && !res.destroyed) this.#cutAfter(lingerMs);
      return;
    }
    this.#ending = true;
    if (res.destroyed) return;
    res.end(last);
    // A client that does not read would hold the connection (and the server's close) open.
    this.#cutAfter(lingerMs);
  }

  #cutAfter(ms: number): void {
    clearTimeout(this.#linger);
    this.#linger = setTimeout(() => this.#res.destroy(), ms).unref();
  }
}
