import { useId, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';
import { useSession } from '../session/session';
import type { Report, ReportPatch } from './report-types';

/**
 * `PATCH /reports/{ref}`: name, description (empty removes it) and retention. The page links by id, so a
 * rename keeps it; scripts publishing to the old name create a new report from then on.
 */
export function ReportSettingsForm({ report, onSaved }: { readonly report: Report; readonly onSaved: (report: Report) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const description = formText(form, 'description').trim();
    const body: ReportPatch = {
      name: formText(form, 'name').trim(),
      description: description === '' ? null : description,
      retentionDays: Number(formText(form, 'retentionDays')),
    };
    const saved = await run(() => call(api.PATCH('/reports/{ref}', { params: { path: { ref: report.id } }, body })));
    if (saved !== undefined) onSaved(saved);
  };

  return (
    <form className="card form rep-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Settings</h2>
      <InputField
        id={`${id}-name`}
        label="Name"
        name="name"
        required
        maxLength={200}
        spellCheck={false}
        defaultValue={report.name}
        hint="Scripts publish to the name: after a rename, the old name starts a new report."
      />
      <label htmlFor={`${id}-description`}>Description</label>
      <textarea id={`${id}-description`} name="description" rows={2} maxLength={2000} defaultValue={report.description ?? ''} />
      <InputField
        id={`${id}-retention`}
        label="Retention (days)"
        name="retentionDays"
        type="number"
        required
        min={0}
        max={36500}
        step={1}
        defaultValue={report.retentionDays}
        hint="0 keeps entries forever."
      />
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Saving…' : 'Save settings'}
      </button>
    </form>
  );
}
