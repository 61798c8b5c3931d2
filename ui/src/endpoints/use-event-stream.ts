// The live events of one endpoint: `GET /events/stream?endpoint=<id>` read with fetch (the token goes in the
// Authorization header, never in the URL) as Server-Sent Events; a dropped stream reconnects with
// Last-Event-ID, so the service replays what was missed (docs/api.md "Live events").
import { useCallback, useEffect, useState } from 'react';
import { bearer, type ApiData } from '../api/client';
import type { Credentials } from '../session/credentials';

export type StreamEvent = ApiData<'/history'>['items'][number];
export type StreamListener = (event: StreamEvent) => void;
export type StreamStatus = 'connecting' | 'live' | 'reconnecting' | 'stopped';

/** Events kept on the page, newest first; older ones are in the history. */
export const STREAM_KEPT = 100;
/** The wait before a reconnect when the service gave no `retry`. */
const DEFAULT_RETRY_MS = 3000;

export interface EventStream {
  /** The newest {@link STREAM_KEPT} events, newest first (frozen while paused). */
  readonly events: readonly StreamEvent[];
  readonly status: StreamStatus;
  /** The API's message when it refused the stream (it is not retried), or why the last connection failed. */
  readonly error: string | undefined;
  readonly paused: boolean;
  /** Events that came while paused (kept, and shown on resume). */
  readonly newWhilePaused: number;
  readonly setPaused: (paused: boolean) => void;
  /** Calls `listener` with every event as it comes, paused or not; returns the unsubscribe. */
  readonly subscribe: (listener: StreamListener) => () => void;
}

interface SseMessage {
  id?: string;
  event?: string;
  data: string[];
  retry?: number;
}

/** Reads the SSE body, calling `onMessage` per message (WHATWG HTML "Server-sent events" parsing). */
async function readMessages(body: ReadableStream<Uint8Array>, onMessage: (message: SseMessage) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let message: SseMessage = { data: [] };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      if (line === '') {
        if (message.data.length > 0 || message.event !== undefined || message.retry !== undefined) onMessage(message);
        message = { data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const text = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'id') message.id = text;
      else if (field === 'event') message.event = text;
      else if (field === 'data') message.data.push(text);
      else if (field === 'retry' && /^\d+$/.test(text)) message.retry = Number(text);
    }
  }
}

async function errorMessage(response: Response): Promise<string> {
  const body = (await response.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
  return body?.error?.message ?? `The service answered ${response.status}`;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** Follows the live events of the endpoint `endpointId` in the acting account for as long as the component lives. */
export function useEventStream(credentials: Credentials, endpointId: string): EventStream {
  const [events, setEvents] = useState<readonly StreamEvent[]>([]);
  const [received, setReceived] = useState(0);
  const [status, setStatus] = useState<StreamStatus>('connecting');
  const [error, setError] = useState<string | undefined>(undefined);
  const [pause, setPause] = useState<{ events: readonly StreamEvent[]; received: number } | undefined>(undefined);
  const [listeners] = useState(() => new Set<StreamListener>());
  const { token, accountId } = credentials;

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    let lastId: string | undefined;
    let retryMs = DEFAULT_RETRY_MS;

    const run = async () => {
      while (!signal.aborted) {
        try {
          const headers: Record<string, string> = { authorization: bearer(token, accountId), accept: 'text/event-stream' };
          if (lastId !== undefined) headers['last-event-id'] = lastId;
          const response = await fetch(`/events/stream?endpoint=${encodeURIComponent(endpointId)}`, { headers, signal, cache: 'no-store' });
          if (!response.ok || response.body === null) {
            // An error answer comes before the stream starts; like EventSource, do not retry a refusal.
            setError(await errorMessage(response));
            if (response.status < 500) {
              setStatus('stopped');
              return;
            }
          } else {
            setStatus('live');
            setError(undefined);
            await readMessages(response.body, (message) => {
              if (message.retry !== undefined) retryMs = message.retry;
              if (message.event !== 'event' || message.data.length === 0) return;
              const event = JSON.parse(message.data.join('\n')) as StreamEvent;
              lastId = message.id ?? event.id;
              setEvents((current) => [event, ...current].slice(0, STREAM_KEPT));
              setReceived((count) => count + 1);
              for (const listener of listeners) listener(event);
            });
          }
        } catch (failure) {
          if (signal.aborted) return;
          setError(`The event stream was interrupted: ${failure instanceof Error ? failure.message : String(failure)}`);
        }
        if (signal.aborted) return;
        setStatus('reconnecting');
        await sleep(retryMs, signal);
      }
    };
    void run();
    return () => controller.abort();
  }, [token, accountId, endpointId, listeners]);

  const subscribe = useCallback(
    (listener: StreamListener) => {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    [listeners],
  );

  return {
    events: pause?.events ?? events,
    status,
    error,
    paused: pause !== undefined,
    newWhilePaused: pause === undefined ? 0 : received - pause.received,
    setPaused: (paused) => setPause(paused ? { events, received } : undefined),
    subscribe,
  };
}
