import { useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { splitNames, valueOfText } from './json-text';
import { endpointFilterParams, splitTags, type EndpointQuery } from './endpoint-query';
import { runEach, type ItemFailure } from './run-each';

type EndpointPatch = paths['/endpoints/{ref}']['patch']['requestBody']['content']['application/json'];
type BulkChange = paths['/endpoints']['patch']['requestBody']['content']['application/json'];

/** The endpoints a bulk edit covers, by id with the key to report failures by. */
interface Target {
  readonly id: string;
  readonly key: string;
}

/** What the form asks for. */
interface Change {
  readonly addTags: string[];
  readonly removeTags: string[];
  /** Status details to set (name → value) and to remove (name → null), secondsBeforeMissing among them. */
  readonly details: Record<string, unknown>;
  /** Set: a number of seconds, null: remove, undefined: leave. */
  readonly secondsBeforeMissing: number | null | undefined;
}

type Done = { readonly changed: number; readonly failures: readonly ItemFailure<Target>[] };
type Outcome = Done | { readonly error: string };

const NUMBER = new Intl.NumberFormat('en');
/** How many endpoints are looked up at once to edit all that match (the API's largest page). */
const LOOKUP_PAGE = 1000;

function readChange(form: FormData): Change | string {
  const addTags = splitTags(formText(form, 'addTags'));
  const removeTags = splitTags(formText(form, 'removeTags'));
  const details: Record<string, unknown> = {};
  const detailName = formText(form, 'detailName').trim();
  const detailValue = formText(form, 'detailValue');
  if (detailName !== '') details[detailName] = valueOfText(detailValue);
  else if (detailValue !== '') return 'Name the status detail to set.';
  for (const name of splitNames(formText(form, 'removeDetails'))) details[name] = null;
  const seconds = formText(form, 'secondsBeforeMissing').trim();
  const removeSeconds = form.get('removeSecondsBeforeMissing') !== null;
  const secondsBeforeMissing = removeSeconds ? null : seconds === '' ? undefined : Number(seconds);
  if (secondsBeforeMissing !== undefined && Object.hasOwn(details, 'secondsBeforeMissing')) return 'secondsBeforeMissing is given twice: use its own field.';
  if (addTags.length === 0 && removeTags.length === 0 && Object.keys(details).length === 0 && secondsBeforeMissing === undefined) return 'Choose a change: tags to add or remove, a status detail or secondsBeforeMissing.';
  return { addTags, removeTags, details, secondsBeforeMissing };
}

/** The body of PATCH /endpoints/{ref} for one endpoint. */
function patchOf(change: Change): EndpointPatch {
  const statusDetails = { ...change.details, ...(change.secondsBeforeMissing === undefined ? {} : { secondsBeforeMissing: change.secondsBeforeMissing }) };
  return {
    ...(change.addTags.length === 0 ? {} : { addTags: change.addTags }),
    ...(change.removeTags.length === 0 ? {} : { removeTags: change.removeTags }),
    ...(Object.keys(statusDetails).length === 0 ? {} : { statusDetails }),
  };
}

/** The body of PATCH /endpoints when the change fits it (tags and secondsBeforeMissing only). */
function bulkOf(change: Change): BulkChange | undefined {
  if (Object.keys(change.details).length > 0) return undefined;
  return {
    ...(change.addTags.length === 0 ? {} : { addTags: change.addTags }),
    ...(change.removeTags.length === 0 ? {} : { removeTags: change.removeTags }),
    ...(change.secondsBeforeMissing === undefined ? {} : { secondsBeforeMissing: change.secondsBeforeMissing }),
  };
}

async function matchingTargets(api: ApiClient, query: EndpointQuery): Promise<Target[]> {
  const targets: Target[] = [];
  for (let offset = 0; ; offset += LOOKUP_PAGE) {
    const page = await call(api.GET('/endpoints', { params: { query: { ...endpointFilterParams(query), limit: LOOKUP_PAGE, offset } } }));
    targets.push(...page.items.map(({ id, key }) => ({ id, key })));
    if (page.items.length < LOOKUP_PAGE || targets.length >= page.total) return targets;
  }
}

export interface BulkEditProps {
  readonly api: ApiClient;
  readonly query: EndpointQuery;
  /** The ticked endpoints (of any page). */
  readonly selected: readonly Target[];
  /** How many endpoints match the filter. */
  readonly matching: number;
  /** After a run: the list reloads (the selection stays). */
  readonly onDone: () => void;
  readonly onClearSelection: () => void;
}

/**
 * Changes the ticked endpoints, or all that match the filter: tags to add and remove, status details to set and
 * remove, secondsBeforeMissing. All matching with only tags and secondsBeforeMissing is one `PATCH /endpoints`
 * (the bulk route, without `state`, which it does not filter by); anything else is one `PATCH /endpoints/{id}`
 * per endpoint with a progress bar.
 */
export function EndpointBulkEdit({ api, query, selected, matching, onDone, onClearSelection }: BulkEditProps) {
  const id = useId();
  // The scope chosen, for the selection it was chosen with: a new selection chooses the selected rows again.
  const [choice, setChoice] = useState<{ readonly scope: 'selected' | 'all'; readonly count: number } | undefined>(undefined);
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const [progress, setProgress] = useState<{ done: number; total: number } | undefined>(undefined);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const effectiveScope = selected.length === 0 ? 'all' : choice !== undefined && choice.count === selected.length ? choice.scope : 'selected';
  const setScope = (scope: 'selected' | 'all') => setChoice({ scope, count: selected.length });
  const busy = progress !== undefined;

  const apply = async (change: Change): Promise<Done> => {
    const bulk = bulkOf(change);
    if (effectiveScope === 'all' && query.state === '' && bulk !== undefined) {
      setProgress({ done: 0, total: matching });
      const { state: _state, ...filter } = endpointFilterParams(query);
      const { updated } = await call(api.PATCH('/endpoints', { params: { query: filter }, body: bulk }));
      return { changed: updated, failures: [] };
    }
    setProgress({ done: 0, total: effectiveScope === 'all' ? matching : selected.length });
    const targets = effectiveScope === 'all' ? await matchingTargets(api, query) : selected;
    setProgress({ done: 0, total: targets.length });
    const body = patchOf(change);
    const failures = await runEach(
      targets,
      (target) => call(api.PATCH('/endpoints/{ref}', { params: { path: { ref: target.id } }, body })),
      (done) => setProgress({ done, total: targets.length }),
    );
    return { changed: targets.length - failures.length, failures };
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const change = readChange(new FormData(form));
    setOutcome(undefined);
    if (typeof change === 'string') {
      setProblem(change);
      return;
    }
    setProblem(undefined);
    try {
      const result = await apply(change);
      setOutcome(result);
      // Done everywhere: the fields start empty for the next change (a failure keeps them to correct).
      if (result.failures.length === 0) form.reset();
    } catch (error) {
      setOutcome({ error: messageOf(error) });
    } finally {
      setProgress(undefined);
      onDone();
    }
  };

  return (
    <form className="card form bulk-edit" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Bulk edit</h2>
      <fieldset className="bulk-scope" disabled={busy}>
        <legend>Change</legend>
        <label>
          <input type="radio" name="scope" value="selected" checked={effectiveScope === 'selected'} disabled={selected.length === 0} onChange={() => setScope('selected')} />
          {` the ${NUMBER.format(selected.length)} selected`}
        </label>
        <label>
          <input type="radio" name="scope" value="all" checked={effectiveScope === 'all'} onChange={() => setScope('all')} />
          {` all ${NUMBER.format(matching)} matching the filter`}
        </label>
        {selected.length === 0 ? null : (
          <button type="button" className="button button-quiet" onClick={onClearSelection}>
            Clear selection
          </button>
        )}
      </fieldset>
      <div className="bulk-fields">
        <div className="field">
          <label htmlFor={`${id}-add`}>Add tags</label>
          <input id={`${id}-add`} name="addTags" placeholder="site:berlin, battery" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-remove`}>Remove tags</label>
          <input id={`${id}-remove`} name="removeTags" placeholder="site (every site:*), battery" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-detail-name`}>Set status detail</label>
          <input id={`${id}-detail-name`} name="detailName" placeholder="name, e.g. firmware" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-detail-value`}>to the value</label>
          <input id={`${id}-detail-value`} name="detailValue" placeholder='JSON or text: 87, true, 1.4.2' spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-remove-details`}>Remove status details</label>
          <input id={`${id}-remove-details`} name="removeDetails" placeholder="names, e.g. firmware battery" spellCheck={false} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-seconds`}>secondsBeforeMissing</label>
          <input id={`${id}-seconds`} name="secondsBeforeMissing" type="number" min={0} step={1} inputMode="numeric" />
          <label className="checkbox-label">
            <input type="checkbox" name="removeSecondsBeforeMissing" /> remove it
          </label>
        </div>
      </div>
      <ErrorMessage message={problem} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Applying…' : 'Apply'}
      </button>
      {progress === undefined ? null : (
        <div className="bulk-progress" role="status">
          <progress max={Math.max(progress.total, 1)} value={progress.done} aria-label="Endpoints changed so far" />
          <span>
            {NUMBER.format(progress.done)} of {NUMBER.format(progress.total)}
          </span>
        </div>
      )}
      <BulkOutcome outcome={outcome} />
    </form>
  );
}

function BulkOutcome({ outcome }: { readonly outcome: Outcome | undefined }) {
  if (outcome === undefined) return null;
  if ('error' in outcome) return <ErrorMessage message={outcome.error} />;
  return (
    <>
      <p className="notice" role="status">
        Changed {NUMBER.format(outcome.changed)} {outcome.changed === 1 ? 'endpoint' : 'endpoints'}.
      </p>
      {outcome.failures.length === 0 ? null : (
        <div className="error-message" role="alert">
          {NUMBER.format(outcome.failures.length)} failed:
          <ul className="bulk-failures">
            {outcome.failures.map(({ item, message }) => (
              <li key={item.id}>
                <span className="mono">{item.key}</span>: {message}
              </li>
            ))}
          </ul>
        </div>
      )}
    </>
  );
}
