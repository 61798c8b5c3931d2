import { useCallback, useMemo } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { LogCsvDownload } from './log-csv';
import { LogFilterForm } from './log-filter-form';
import { apiFilters, isFiltered, LOG_PAGE_SIZE, logOutcome, logsHref, readLogQuery, type LogOutcome, type LogPage, type LogQuery } from './log-query';
import { LogTable } from './log-table';
import './logs.css';

/** How many triggers are named in the filter and the rows (the others show by id). */
const TRIGGERS_NAMED = 100;

/**
 * `#/logs`: the account's log (`GET /log`), newest first, a page at a time, filtered by level, source, text,
 * endpoint, trigger and period, all in the URL. A search that runs out of time says how far it got and goes on
 * from there; **Download CSV** has every matching entry.
 */
export function LogsPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Logs');
  const { api } = useSession();
  const query = useMemo(() => readLogQuery(search), [search]);
  const key = logsHref(query);

  const load = useCallback(() => {
    const { next, timeout } = query;
    return call(
      api.GET('/log', {
        params: { query: { ...apiFilters(query), limit: LOG_PAGE_SIZE, next: next === '' ? undefined : next, timeout: timeout === '' ? undefined : Number(timeout) } },
      }),
    );
  }, [api, query]);
  const entries = useResource(load);
  const loadTriggers = useCallback(() => call(api.GET('/triggers', { params: { query: { limit: TRIGGERS_NAMED } } })), [api]);
  const triggers = useResource(loadTriggers);
  const triggerList = useMemo(
    () => (triggers.data?.items ?? []).map((trigger) => ({ id: trigger.id, name: trigger.name })).sort((a, b) => a.name.localeCompare(b.name)),
    [triggers.data],
  );
  const triggerNames = useMemo(() => new Map(triggerList.map((trigger) => [trigger.id, trigger.name])), [triggerList]);

  return (
    <section aria-labelledby="logs-title">
      <div className="log-head">
        <h1 id="logs-title">Logs</h1>
        <button type="button" className="button button-quiet" onClick={entries.reload} disabled={entries.loading}>
          {entries.loading ? 'Loading…' : 'Refresh'}
        </button>
      </div>
      {/* A new filter in the URL (a link, back/forward) starts the form afresh. */}
      <LogFilterForm key={key} query={query} triggers={triggerList} />
      <LogCsvDownload query={query} />
      <ErrorMessage message={entries.error ?? triggers.error} />
      {entries.data === undefined ? (
        entries.error === undefined ? <Loading what="log entries" /> : null
      ) : (
        <LogResults page={entries.data} query={query} loading={entries.loading} triggerNames={triggerNames} />
      )}
    </section>
  );
}

function LogResults({ page, query, loading, triggerNames }: { readonly page: LogPage; readonly query: LogQuery; readonly loading: boolean; readonly triggerNames: ReadonlyMap<string, string> }) {
  const outcome = logOutcome(page);
  const count = page.items.length;
  return (
    <div aria-busy={loading}>
      <nav className="pager" aria-label="Pages of log entries">
        <span className="pager-range" aria-live="polite">
          {count === 0 ? 'No entries' : `${count} ${count === 1 ? 'entry' : 'entries'}${query.next === '' ? ', the newest first' : ', older ones'}`}
        </span>
        <span className="pager-links">
          {query.next === '' ? (
            <span className="button button-quiet" aria-disabled="true">
              Newest
            </span>
          ) : (
            <a className="button button-quiet" href={logsHref({ ...query, next: '' })}>
              Newest
            </a>
          )}
          {outcome.kind === 'end' ? (
            <span className="button button-quiet" aria-disabled="true">
              Older
            </span>
          ) : (
            <a className="button button-quiet" href={logsHref({ ...query, next: outcome.next })} rel="next">
              Older
            </a>
          )}
        </span>
      </nav>
      {outcome.kind === 'partial' ? <PartialNotice outcome={outcome} query={query} /> : null}
      {count > 0 ? <LogTable entries={page.items} triggerNames={triggerNames} /> : <EmptyLog query={query} partial={outcome.kind === 'partial'} />}
    </div>
  );
}

/** The search stopped at its time budget: say how far back it looked, and offer to go on from there. */
function PartialNotice({ outcome, query }: { readonly outcome: Extract<LogOutcome, { kind: 'partial' }>; readonly query: LogQuery }) {
  return (
    <div className="notice log-partial" role="status">
      <p>
        The search ran out of time
        {outcome.reached === null ? null : (
          <>
            {' '}
            after reaching <DateTime value={outcome.reached} />
          </>
        )}
        : showing what it found.
      </p>
      <button type="button" className="button" onClick={() => navigate(logsHref({ ...query, next: outcome.next }))}>
        Search further
      </button>
    </div>
  );
}

function EmptyLog({ query, partial }: { readonly query: LogQuery; readonly partial: boolean }) {
  if (partial) return <p className="muted">Nothing found in the part of the log searched so far.</p>;
  if (query.next !== '') return <p className="muted">{isFiltered(query) ? 'No older entry matches.' : 'No older entries.'}</p>;
  if (isFiltered(query)) {
    return (
      <p className="muted">
        No entry matches these filters. Widen them, or <a href={logsHref({ timeout: query.timeout })}>show the whole log</a>.
      </p>
    );
  }
  return (
    <div className="muted log-empty">
      <p>The log is empty. Entries appear here when:</p>
      <ul>
        <li>
          a trigger’s script logs (<code>log('…')</code>, <code>console.*</code>) or a run fails;
        </li>
        <li>an API call with this account’s token is refused, or a change made through the API succeeds;</li>
        <li>a device is refused (a wrong MQTT password, a payload that cannot be decoded).</li>
      </ul>
    </div>
  );
}
