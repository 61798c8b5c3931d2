import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { InputField } from '../components/input-field';
import { EventTypesField } from './event-types-field';
import { FilterRows } from './filter-rows';
import { GlobalRows } from './global-rows';
import { ScriptEditor } from './script-editor';
import { TestRunPanel } from './test-run-panel';
import { writeOf, type TriggerDraft } from './trigger-draft';
import type { ScriptNamespace, Trigger } from './trigger-types';

const SCRIPT_HINT = 'JavaScript. Ctrl+Space completes namespaces, their functions and event fields. Tab indents: press Escape, then Tab, to move on.';

export interface TriggerFormProps {
  readonly api: ApiClient;
  /** The trigger being edited; undefined: a new one. */
  readonly trigger: Trigger | undefined;
  readonly initial: TriggerDraft;
  readonly namespaces: readonly ScriptNamespace[];
  readonly onSaved: (trigger: Trigger) => void;
}

/** Name, event types, filters, flags, global variables and the script; saves with POST or PUT /triggers. */
export function TriggerForm({ api, trigger, initial, namespaces, onSaved }: TriggerFormProps) {
  const id = useId();
  const [draft, setDraft] = useState(initial);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const change = (patch: Partial<TriggerDraft>) => setDraft((current) => ({ ...current, ...patch }));
  const onScript = useCallback((script: string) => setDraft((current) => ({ ...current, script })), []);
  const form = trigger?.form;
  const write = useCallback(() => writeOf(draft, form), [draft, form]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    let body;
    try {
      body = write();
    } catch (failure) {
      setError(messageOf(failure));
      return;
    }
    setBusy(true);
    try {
      const saved = trigger === undefined ? await call(api.POST('/triggers', { body })) : await call(api.PUT('/triggers/{id}', { params: { path: { id: trigger.id } }, body }));
      onSaved(saved);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="trg-trigger-editor">
      {/* noValidate: what the API refuses, it says why (its message is shown). */}
      <form className="form card" onSubmit={(event) => void save(event)} noValidate aria-labelledby={`${id}-title`}>
        <h2 id={`${id}-title`}>Definition</h2>
        <InputField id={`${id}-name`} label="Name" value={draft.name} onChange={(event) => change({ name: event.target.value })} maxLength={200} autoComplete="off" />
        <div className="trg-checks">
          <label className="trg-check">
            <input type="checkbox" checked={draft.enabled} onChange={(event) => change({ enabled: event.target.checked })} />
            Enabled
          </label>
          <label className="trg-check">
            <input type="checkbox" checked={draft.library} onChange={(event) => change({ library: event.target.checked })} aria-describedby={`${id}-library-hint`} />
            Library
          </label>
          <span id={`${id}-library-hint`} className="muted field-hint">
            A library runs on no event: other scripts load it with trigger.import(name).
          </span>
        </div>
        <EventTypesField events={draft.events} onChange={(events) => change({ events })} />
        <FilterRows rows={draft.filters} onChange={(filters) => change({ filters })} />
        <GlobalRows rows={draft.globals} onChange={(globals) => change({ globals })} />
        <span className="trg-script-label" aria-hidden="true">
          Script
        </span>
        <p className="muted field-hint" aria-hidden="true">
          {SCRIPT_HINT}
        </p>
        <ScriptEditor initial={initial.script} onChange={onScript} namespaces={namespaces} globals={draft.globals.map((row) => row.name).filter((name) => name !== '')} label="Script" description={SCRIPT_HINT} />
        <ErrorMessage message={error} />
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Saving…' : trigger === undefined ? 'Create trigger' : 'Save trigger'}
        </button>
      </form>
      <TestRunPanel api={api} triggerId={trigger?.id} eventTypes={draft.events} draft={write} />
    </div>
  );
}
