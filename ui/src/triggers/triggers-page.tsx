import { useCallback, useState } from 'react';
import { call, messageOf } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href } from '../router/hash-location';
import { EXECUTIONS_PATH, triggerPath } from '../router/routes';
import { useSession } from '../session/session';
import type { Trigger } from './trigger-types';
import './triggers.css';

const TRIGGERS_PAGE_SIZE = 25;

/** The triggers of the acting account, a page at a time: GET /triggers; deletes with DELETE /triggers/{id}. */
export function TriggersPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Triggers');
  const { api } = useSession();
  const requested = Number(search.get('offset') ?? 0);
  const offset = Number.isInteger(requested) && requested > 0 ? requested : 0;
  const load = useCallback(() => call(api.GET('/triggers', { params: { query: { limit: TRIGGERS_PAGE_SIZE, offset } } })), [api, offset]);
  const triggers = useResource(load);
  const { reload } = triggers;
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const [deleting, setDeleting] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const [deleted, setDeleted] = useState<string | undefined>(undefined);

  const remove = async (trigger: Trigger) => {
    setDeleting(true);
    setError(undefined);
    try {
      await call(api.DELETE('/triggers/{id}', { params: { path: { id: trigger.id } } }));
      setDeleted(trigger.name);
      setConfirming(undefined);
      reload();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setDeleting(false);
    }
  };

  return (
    <section aria-labelledby="triggers-title">
      <h1 id="triggers-title">Triggers</h1>
      <p className="trg-page-actions">
        <a className="button" href={href(triggerPath('new'))}>
          New trigger
        </a>
        <a className="button button-quiet" href={href(EXECUTIONS_PATH)}>
          Executions log
        </a>
      </p>
      <ErrorMessage message={triggers.error ?? error} />
      {deleted === undefined ? null : (
        <p className="notice" role="status">
          Deleted trigger “{deleted}”.
        </p>
      )}
      {triggers.data === undefined ? (
        triggers.error === undefined ? <Loading what="triggers" /> : null
      ) : (
        <div aria-busy={triggers.loading}>
          <Pager total={triggers.data.total} offset={triggers.data.offset} limit={TRIGGERS_PAGE_SIZE} noun="triggers" hrefAt={(at) => href('/triggers', { offset: at === 0 ? undefined : at })} />
          {triggers.data.items.length === 0 ? (
            <p className="muted">No triggers yet: write one to run scripts on the account's events.</p>
          ) : (
            <div className="table-scroll">
              <table className="table" aria-label="Triggers">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Events</th>
                    <th scope="col">Flags</th>
                    <th scope="col">Version</th>
                    <th scope="col">Updated</th>
                    <th scope="col" className="trg-hidden-heading">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {triggers.data.items.map((trigger) => (
                    <tr key={trigger.id}>
                      <td>
                        <a href={href(triggerPath(trigger.id))}>{trigger.name}</a>
                      </td>
                      <td>
                        {trigger.events.length === 0 ? (
                          <span className="muted">none</span>
                        ) : (
                          <ul className="tag-list">
                            {trigger.events.map((type) => (
                              <li key={type}>
                                <span className="tag mono">{type}</span>
                              </li>
                            ))}
                          </ul>
                        )}
                      </td>
                      <td className="nowrap">
                        <span className={`state ${trigger.enabled ? 'state-connected' : 'state-unavailable'}`}>{trigger.enabled ? 'enabled' : 'disabled'}</span>
                        {trigger.library ? <span className="badge">library</span> : null}
                      </td>
                      <td>{trigger.version}</td>
                      <td>
                        <DateTime value={trigger.updatedAt} />
                      </td>
                      <td className="nowrap">
                        {confirming === trigger.id ? (
                          <span className="trg-confirm" role="group" aria-label={`Confirm deleting ${trigger.name}`}>
                            <span>Delete “{trigger.name}”?</span>{' '}
                            <button type="button" className="button trg-button-danger" disabled={deleting} onClick={() => void remove(trigger)}>
                              {deleting ? 'Deleting…' : 'Delete'}
                            </button>{' '}
                            <button type="button" className="button button-quiet" onClick={() => setConfirming(undefined)}>
                              Cancel
                            </button>
                          </span>
                        ) : (
                          <>
                            <a className="button button-quiet" href={href(EXECUTIONS_PATH, { triggerId: trigger.id })} aria-label={`Executions of ${trigger.name}`}>
                              Executions
                            </a>{' '}
                            <button type="button" className="button button-quiet" onClick={() => setConfirming(trigger.id)} aria-label={`Delete ${trigger.name}`}>
                              Delete
                            </button>
                          </>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </section>
  );
}
