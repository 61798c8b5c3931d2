import { useCallback, useEffect, useId, useMemo, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { useSession } from '../session/session';
import type { FieldCensus } from './health-query';

const NUMBER = new Intl.NumberFormat('en');
const FULL = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });
/** How often "counted … ago" moves on. */
const AGE_TICK_MS = 5000;

/** "just now", "20 s ago", "3 min ago", "2 h ago", "4 days ago". */
export function ageText(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86_400);
  return `${days} ${days === 1 ? 'day' : 'days'} ago`;
}

/** Now, moving on every few seconds; the clock is read in the timer, never while rendering. */
function useNow(start: number): number {
  const [now, setNow] = useState(start);
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), AGE_TICK_MS);
    return () => window.clearInterval(timer);
  }, []);
  return Math.max(now, start);
}

/**
 * "Fields in use": the keys the account's objects use and how many objects use each (`GET /metrics/fields`),
 * filtered as you type, with when the service counted them (a census it keeps and refreshes in the background).
 */
export function FieldsInUse() {
  const { api } = useSession();
  const load = useCallback(async () => ({ census: await call(api.GET('/metrics/fields')), loadedAt: Date.now() }), [api]);
  const loaded = useResource(load);

  return (
    <section className="hlt-fields" aria-labelledby="fields-title">
      <div className="hlt-head">
        <h2 id="fields-title">Fields in use</h2>
        <button type="button" className="button button-quiet" onClick={loaded.reload} disabled={loaded.loading}>
          {loaded.loading ? 'Loading…' : 'Refresh'}
        </button>
      </div>
      <p className="muted field-hint">
        Endpoints’ status details, parameters, storage and tags, services’ options and triggers’ globals: each top-level key and how many objects have it.
      </p>
      <ErrorMessage message={loaded.error} />
      {loaded.data === undefined ? (
        loaded.error === undefined ? <Loading what="the fields" /> : null
      ) : (
        <FieldList census={loaded.data.census} loadedAt={loaded.data.loadedAt} />
      )}
    </section>
  );
}

function FieldList({ census, loadedAt }: { readonly census: FieldCensus; readonly loadedAt: number }) {
  const id = useId();
  const [filter, setFilter] = useState('');
  const now = useNow(loadedAt);
  const wanted = filter.trim().toLowerCase();
  const shown = useMemo(
    () => (wanted === '' ? census.items : census.items.filter((item) => `${item.object} ${item.field}`.toLowerCase().includes(wanted))),
    [census.items, wanted],
  );
  const computedAt = new Date(census.computedAt);

  return (
    <>
      <p className="hlt-census">
        Counted{' '}
        <time dateTime={census.computedAt} title={FULL.format(computedAt)}>
          {ageText(now - computedAt.getTime())}
        </time>
        ; the service counts again in the background when a count is older than a minute.
      </p>
      {census.truncated ? (
        <p className="notice">The account uses more distinct fields than a count keeps (10,000): some are missing.</p>
      ) : null}
      {census.items.length === 0 ? (
        <p className="muted">
          No fields yet. Give endpoints status details, parameters or tags (on an endpoint’s page or with <code>PATCH /endpoints/&#123;id&#125;</code>), and they are counted here.
        </p>
      ) : (
        <>
          <div className="field hlt-filter">
            <label htmlFor={`${id}-filter`}>Filter fields</label>
            <input id={`${id}-filter`} type="search" value={filter} onChange={(event) => setFilter(event.target.value)} placeholder="statusDetails." spellCheck={false} />
          </div>
          <p className="muted" aria-live="polite">
            {shown.length === census.items.length ? `${NUMBER.format(shown.length)} fields` : `${NUMBER.format(shown.length)} of ${NUMBER.format(census.items.length)} fields`}
          </p>
          {shown.length === 0 ? (
            <p className="muted">No field matches “{filter.trim()}”.</p>
          ) : (
            <div className="table-scroll">
              <table className="table table-compact hlt-field-table" aria-label="Fields in use">
                <thead>
                  <tr>
                    <th scope="col">Object</th>
                    <th scope="col">Field</th>
                    <th scope="col" className="hlt-number">
                      Count
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((item) => (
                    <tr key={`${item.object} ${item.field}`}>
                      <td>{item.object}</td>
                      <td className="mono hlt-field">{item.field}</td>
                      <td className="hlt-number">{NUMBER.format(item.count)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}
