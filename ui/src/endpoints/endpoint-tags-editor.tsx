import { useId, useState, type FormEvent } from 'react';
import type { ApiClient } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { TagList } from '../components/tag-list';
import { patchEndpoint, type EndpointPatchBody } from './endpoint-patch';
import { endpointsHref, splitTags } from './endpoint-query';
import type { Endpoint } from './endpoint-table';

/** The endpoint's tags (each links to the list filtered by it), with adding and removing (`addTags` / `removeTags`). */
export function EndpointTagsEditor({ api, endpoint, onChanged }: { readonly api: ApiClient; readonly endpoint: Endpoint; readonly onChanged: (endpoint: Endpoint) => void }) {
  const id = useId();
  const { busy, error, run } = useAction();
  const [adding, setAdding] = useState('');
  const [removing, setRemoving] = useState('');

  const change = async (body: EndpointPatchBody) => {
    const changed = await run(() => patchEndpoint(api, endpoint.id, body));
    if (changed !== undefined) onChanged(changed);
    return changed !== undefined;
  };
  const add = async (event: FormEvent) => {
    event.preventDefault();
    const tags = splitTags(adding);
    if (tags.length > 0 && (await change({ addTags: tags }))) setAdding('');
  };
  const remove = async () => {
    const tag = removing === '' ? endpoint.tags[0] : removing;
    if (tag !== undefined && (await change({ removeTags: [tag] }))) setRemoving('');
  };

  return (
    <section className="card panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Tags</h2>
      <TagList tags={endpoint.tags} hrefFor={(tag) => endpointsHref({ tags: [tag] })} />
      <form className="inline-form" onSubmit={(event) => void add(event)}>
        <div className="field">
          <label htmlFor={`${id}-add`}>Add tags</label>
          <input id={`${id}-add`} value={adding} onChange={(event) => setAdding(event.target.value)} placeholder="site:berlin, battery" spellCheck={false} />
        </div>
        <button type="submit" className="button" disabled={busy || adding.trim() === ''}>
          Add
        </button>
      </form>
      {endpoint.tags.length === 0 ? null : (
        <div className="inline-form">
          <div className="field">
            <label htmlFor={`${id}-remove`}>Remove tag</label>
            <select id={`${id}-remove`} value={removing === '' ? endpoint.tags[0] : removing} onChange={(event) => setRemoving(event.target.value)}>
              {endpoint.tags.map((tag) => (
                <option key={tag} value={tag}>
                  {tag}
                </option>
              ))}
            </select>
          </div>
          <button type="button" className="button button-quiet" disabled={busy} onClick={() => void remove()}>
            Remove
          </button>
        </div>
      )}
      <ErrorMessage message={error} />
    </section>
  );
}
