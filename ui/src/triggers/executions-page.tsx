import { Fragment, useCallback, useId, useMemo, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href, navigate } from '../router/hash-location';
import { EXECUTIONS_PATH, triggerPath } from '../router/routes';
import { useSession } from '../session/session';
import { ExecutionTrace } from './execution-trace';
import './triggers.css';

const EXECUTIONS_PAGE_SIZE = 25;
/** How many triggers the trigger filter offers by name. */
const TRIGGERS_NAMED = 100;

type Status = 'success' | 'failed';

interface ExecutionQuery {
  readonly triggerId: string;
  readonly status: Status | '';
  readonly offset: number;
}

function readQuery(search: URLSearchParams): ExecutionQuery {
  const offset = Number(search.get('offset') ?? 0);
  const status = search.get('status');
  return { triggerId: search.get('triggerId') ?? '', status: status === 'success' || status === 'failed' ? status : '', offset: Number.isInteger(offset) && offset > 0 ? offset : 0 };
}

function executionsHref(query: Partial<ExecutionQuery>): string {
  return href(EXECUTIONS_PATH, { triggerId: query.triggerId, status: query.status, offset: query.offset === 0 ? undefined : query.offset });
}

/** The executions log: GET /executions, by trigger and status, newest first; each row opens its trace. */
export function ExecutionsPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Executions');
  const { api } = useSession();
  const query = useMemo(() => readQuery(search), [search]);
  const { triggerId, status, offset } = query;
  const load = useCallback(
    () => call(api.GET('/executions', { params: { query: { limit: EXECUTIONS_PAGE_SIZE, offset, ...(triggerId === '' ? {} : { triggerId }), ...(status === '' ? {} : { status }) } } })),
    [api, triggerId, status, offset],
  );
  const executions = useResource(load);
  const loadTriggers = useCallback(() => call(api.GET('/triggers', { params: { query: { limit: TRIGGERS_NAMED } } })), [api]);
  const triggers = useResource(loadTriggers);
  const names = useMemo(() => new Map((triggers.data?.items ?? []).map((trigger) => [trigger.id, trigger.name])), [triggers.data]);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });

  return (
    <section aria-labelledby="executions-title">
      <p className="breadcrumb">
        <a href={href('/triggers')}>Triggers</a>
      </p>
      <h1 id="executions-title">Executions</h1>
      <ExecutionFilter key={search.toString()} query={query} triggers={triggers.data?.items ?? []} />
      <ErrorMessage message={executions.error ?? triggers.error} />
      {executions.data === undefined ? (
        executions.error === undefined ? <Loading what="executions" /> : null
      ) : (
        <div aria-busy={executions.loading}>
          <div className="trg-pager-row">
            <Pager total={executions.data.total} offset={executions.data.offset} limit={EXECUTIONS_PAGE_SIZE} noun="executions" hrefAt={(at) => executionsHref({ ...query, offset: at })} />
            <button type="button" className="button button-quiet" onClick={executions.reload} disabled={executions.loading}>
              {executions.loading ? 'Refreshing…' : 'Refresh'}
            </button>
          </div>
          {executions.data.items.length === 0 ? (
            <p className="muted">No execution matches.</p>
          ) : (
            <div className="table-scroll">
              <table className="table" aria-label="Executions">
                <thead>
                  <tr>
                    <th scope="col">Started</th>
                    <th scope="col">Trigger</th>
                    <th scope="col">Event</th>
                    <th scope="col">Status</th>
                    <th scope="col">Duration</th>
                    <th scope="col" className="trg-hidden-heading">
                      <span className="visually-hidden">Trace</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {executions.data.items.map((execution) => {
                    const shown = open.has(execution.id);
                    return (
                      <Fragment key={execution.id}>
                        <tr>
                          <td className="nowrap">
                            <DateTime value={execution.startedAt} />
                          </td>
                          <td>
                            <a href={href(triggerPath(execution.triggerId))}>{names.get(execution.triggerId) ?? <span className="mono">{execution.triggerId}</span>}</a>
                            {execution.test ? <span className="badge trg-execution-test">test</span> : null}
                          </td>
                          <td className="mono">{execution.eventType}</td>
                          <td>
                            <span className={`state ${execution.status === 'failed' ? 'state-unavailable' : 'state-connected'}`}>{execution.status}</span>
                          </td>
                          <td className="nowrap">{execution.durationMs.toFixed(1)} ms</td>
                          <td>
                            <button type="button" className="button button-quiet" aria-expanded={shown} aria-controls={`trace-${execution.id}`} onClick={() => toggle(execution.id)}>
                              {shown ? 'Hide trace' : 'Trace'}
                            </button>
                          </td>
                        </tr>
                        {shown ? (
                          <tr className="trg-trace-row">
                            <td colSpan={6} id={`trace-${execution.id}`}>
                              <ExecutionTrace execution={execution} />
                            </td>
                          </tr>
                        ) : null}
                      </Fragment>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </section>
  );
}

function ExecutionFilter({ query, triggers }: { readonly query: ExecutionQuery; readonly triggers: readonly { readonly id: string; readonly name: string }[] }) {
  const id = useId();
  const [triggerId, setTriggerId] = useState(query.triggerId);
  const [status, setStatus] = useState(query.status);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(executionsHref({ triggerId, status, offset: 0 }));
  };
  const known = triggerId === '' || triggers.some((trigger) => trigger.id === triggerId);
  return (
    <form className="filter-form" role="search" aria-label="Filter executions" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-trigger`}>Trigger</label>
        <select id={`${id}-trigger`} value={triggerId} onChange={(event) => setTriggerId(event.target.value)}>
          <option value="">All triggers</option>
          {known ? null : <option value={triggerId}>{triggerId}</option>}
          {triggers.map((trigger) => (
            <option key={trigger.id} value={trigger.id}>
              {trigger.name}
            </option>
          ))}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-status`}>Status</label>
        <select id={`${id}-status`} value={status} onChange={(event) => setStatus(event.target.value as Status | '')}>
          <option value="">Any status</option>
          <option value="success">success</option>
          <option value="failed">failed</option>
        </select>
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Filter
        </button>
        {query.triggerId !== '' || query.status !== '' ? (
          <a className="button button-quiet" href={executionsHref({})}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}
