import { useEffect, useState } from 'react';
import { useTicker } from '../dashboard/use-ticker';
import { openEventStream } from '../history/event-stream';
import { useSession } from '../session/session';

/** How often alert pages load again with no `alert` event seen (the stream refused or dropped). */
export const ALERT_REFRESH_MS = 15_000;
/** Events closer together than this cause one load, not one each. */
const COALESCE_MS = 300;

export interface LiveAlerts {
  /** Grows on every `alert` event (coalesced) and every {@link ALERT_REFRESH_MS}: loads that read it run again. */
  readonly round: number;
  /** The `alert` events are followed live; otherwise only the periodic load runs. */
  readonly live: boolean;
}

/**
 * Keeps an alert page current: `GET /events/stream?type=alert` (every change of an alert is such an event) and,
 * in case the stream is refused or drops, a load every 15 s while the tab is visible.
 */
export function useLiveAlerts(): LiveAlerts {
  const { credentials } = useSession();
  const { token, accountId } = credentials;
  const ticks = useTicker(ALERT_REFRESH_MS);
  const [events, setEvents] = useState(0);
  const [live, setLive] = useState(false);

  useEffect(() => {
    let timer: number | undefined;
    const close = openEventStream(
      token,
      accountId,
      { types: ['alert'], endpoint: '' },
      {
        onOpen: () => setLive(true),
        onEvent: () => {
          timer ??= window.setTimeout(() => {
            timer = undefined;
            setEvents((count) => count + 1);
          }, COALESCE_MS);
        },
        onError: () => setLive(false),
      },
    );
    return () => {
      window.clearTimeout(timer);
      close();
    };
  }, [token, accountId]);

  return { round: ticks + events, live };
}
