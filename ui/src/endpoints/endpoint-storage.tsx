import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { valueOfText } from './json-text';

/** Stored objects per page of the panel. */
const STORAGE_PAGE_SIZE = 10;

/** What was last opened, stored or deleted, or the API's message for it. */
type Shown = { readonly name: string; readonly value: unknown; readonly updatedAt: string } | { readonly deleted: string };

/**
 * The endpoint's storage (`/endpoints/{id}/storage`): the names a page at a time, each one viewable and
 * deletable, and a form that stores a JSON value (or text) under a name.
 */
export function EndpointStorage({ api, endpointId }: { readonly api: ApiClient; readonly endpointId: string }) {
  const id = useId();
  const load = useCallback(() => call(api.GET('/endpoints/{ref}/storage', { params: { path: { ref: endpointId } } })), [api, endpointId]);
  const list = useResource(load);
  const [offset, setOffset] = useState(0);
  const [shown, setShown] = useState<Shown | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');

  const run = async (work: () => Promise<Shown | undefined>) => {
    setBusy(true);
    setError(undefined);
    try {
      const result = await work();
      if (result !== undefined) setShown(result);
      return true;
    } catch (failure) {
      setError(messageOf(failure));
      return false;
    } finally {
      setBusy(false);
      list.reload();
    }
  };
  const path = (objectName: string) => ({ params: { path: { ref: endpointId, name: objectName } } });
  const view = (objectName: string) => void run(() => call(api.GET('/endpoints/{ref}/storage/{name}', path(objectName))));
  const remove = (objectName: string) =>
    void run(async () => {
      await call(api.DELETE('/endpoints/{ref}/storage/{name}', path(objectName)));
      return { deleted: objectName };
    });
  const put = async (event: FormEvent) => {
    event.preventDefault();
    const stored = await run(() => call(api.PUT('/endpoints/{ref}/storage/{name}', { ...path(name.trim()), body: valueOfText(value) })));
    if (stored) {
      setName('');
      setValue('');
    }
  };

  const items = list.data?.items ?? [];
  const start = Math.min(offset, Math.max(0, items.length - 1 - ((items.length - 1) % STORAGE_PAGE_SIZE)));
  const page = items.slice(start, start + STORAGE_PAGE_SIZE);

  return (
    <section className="card panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Storage</h2>
      <ErrorMessage message={list.error} />
      {list.data === undefined ? (
        list.error === undefined ? <Loading what="the storage" /> : null
      ) : items.length === 0 ? (
        <p className="muted">Nothing stored.</p>
      ) : (
        <>
          <div className="table-scroll">
            <table className="table table-compact" aria-label="Stored objects">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Updated</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.map((item) => (
                  <tr key={item.name}>
                    <th scope="row" className="mono">
                      {item.name}
                    </th>
                    <td>
                      <DateTime value={item.updatedAt} />
                    </td>
                    <td className="nowrap">
                      <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => view(item.name)} aria-label={`View ${item.name}`}>
                        View
                      </button>{' '}
                      <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => remove(item.name)} aria-label={`Delete ${item.name}`}>
                        Delete
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {items.length <= STORAGE_PAGE_SIZE ? null : (
            <nav className="pager" aria-label="Pages of stored objects">
              <span className="pager-range">
                {start + 1}–{start + page.length} of {items.length} stored objects
              </span>
              <span className="pager-links">
                <button type="button" className="button button-quiet" disabled={start === 0} onClick={() => setOffset(Math.max(0, start - STORAGE_PAGE_SIZE))}>
                  Previous
                </button>
                <button type="button" className="button button-quiet" disabled={start + STORAGE_PAGE_SIZE >= items.length} onClick={() => setOffset(start + STORAGE_PAGE_SIZE)}>
                  Next
                </button>
              </span>
            </nav>
          )}
        </>
      )}
      {shown === undefined ? null : 'deleted' in shown ? (
        <p className="notice" role="status">
          Deleted “{shown.deleted}”.
        </p>
      ) : (
        <div className="stored-value" role="status">
          <p>
            <span className="mono">{shown.name}</span>, updated <DateTime value={shown.updatedAt} />:
          </p>
          <pre className="json-view">{JSON.stringify(shown.value, null, 2)}</pre>
        </div>
      )}
      <form className="inline-form" onSubmit={(event) => void put(event)} aria-label="Store an object">
        <div className="field">
          <label htmlFor={`${id}-name`}>Store under</label>
          <input id={`${id}-name`} value={name} onChange={(event) => setName(event.target.value)} required maxLength={200} spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-value`}>Value (JSON or text)</label>
          <input id={`${id}-value`} value={value} onChange={(event) => setValue(event.target.value)} spellCheck={false} className="mono" />
        </div>
        <button type="submit" className="button" disabled={busy}>
          Store
        </button>
      </form>
      <ErrorMessage message={error} />
    </section>
  );
}
