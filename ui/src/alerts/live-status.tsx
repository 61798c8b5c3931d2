import { ALERT_REFRESH_MS } from './use-live-alerts';

/** Whether the page follows alert changes as they happen, or loads again every 15 s. */
export function LiveStatus({ live }: { readonly live: boolean }) {
  return live ? (
    <span className="alt-live alt-live-on" title="Every change of an alert shows at once (GET /events/stream?type=alert)">
      live
    </span>
  ) : (
    <span className="alt-live">updated every {ALERT_REFRESH_MS / 1000} s</span>
  );
}
