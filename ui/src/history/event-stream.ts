import { bearer, messageOf, type ErrorBody } from '../api/client';
import type { HistoryEvent } from './event-table';

export interface StreamFilter {
  readonly types: readonly string[];
  readonly endpoint: string;
}

export interface StreamHandlers {
  readonly onOpen: () => void;
  readonly onEvent: (event: HistoryEvent) => void;
  /** The stream ended or could not start: the API's message when it gave one. */
  readonly onError: (message: string) => void;
}

/**
 * Follows `GET /events/stream` with fetch, so the Authorization header is sent and a refusal (an unknown
 * endpoint) comes back with the API's message, which EventSource hides. Returns how to stop it.
 */
export function openEventStream(token: string, accountId: string | undefined, filter: StreamFilter, handlers: StreamHandlers): () => void {
  const abort = new AbortController();
  const query = new URLSearchParams();
  for (const type of filter.types) query.append('type', type);
  if (filter.endpoint !== '') query.append('endpoint', filter.endpoint);
  const url = `${window.location.origin}/events/stream${query.size === 0 ? '' : `?${query.toString()}`}`;

  void (async () => {
    try {
      const response = await fetch(url, { headers: { authorization: bearer(token, accountId), accept: 'text/event-stream' }, signal: abort.signal });
      if (!response.ok || response.body === null) {
        const body = (await response.json().catch(() => undefined)) as ErrorBody | undefined;
        handlers.onError(body?.error.message ?? `The service answered ${response.status}`);
        return;
      }
      handlers.onOpen();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, '\n');
        let end = buffer.indexOf('\n\n');
        while (end !== -1) {
          dispatch(buffer.slice(0, end), handlers);
          buffer = buffer.slice(end + 2);
          end = buffer.indexOf('\n\n');
        }
      }
      handlers.onError('The live stream ended (the service stopped, or this page fell behind)');
    } catch (error) {
      if (!abort.signal.aborted) handlers.onError(`The live stream stopped: ${messageOf(error)}`);
    }
  })();
  return () => abort.abort();
}

/** One Server-Sent Events message: `event: event` carries an event as GET /history gives it. */
function dispatch(message: string, handlers: StreamHandlers): void {
  let name = 'message';
  const data: string[] = [];
  for (const line of message.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') name = value;
    else if (field === 'data') data.push(value);
  }
  if (name === 'event' && data.length > 0) handlers.onEvent(JSON.parse(data.join('\n')) as HistoryEvent);
  else if (name === 'overflow') handlers.onError('This page fell behind the live events: start the live tail again');
}
