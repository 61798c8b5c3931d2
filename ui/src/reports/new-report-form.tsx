import { useId, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';
import { useSession } from '../session/session';
import type { NewReport, Report } from './report-types';

/** What the API keeps entries for when the form leaves retention empty (its default). */
const DEFAULT_RETENTION_DAYS = 90;

/**
 * `POST /reports`: name, description, retention in days. Columns are left to the entries (each new key becomes
 * one), so a report made here fills the same way as one a script's first `report.publish` makes.
 */
export function NewReportForm({ onCreated }: { readonly onCreated: (report: Report) => void }) {
  const id = useId();
  const { api } = useSession();
  const action = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const description = formText(form, 'description').trim();
    const retention = formText(form, 'retentionDays').trim();
    const body: NewReport = {
      name: formText(form, 'name').trim(),
      ...(description === '' ? {} : { description }),
      ...(retention === '' ? {} : { retentionDays: Number(retention) }),
    };
    const created = await action.run(() => call(api.POST('/reports', { body })));
    if (created === undefined) return;
    element.reset();
    onCreated(created);
  };

  return (
    <form className="card form rep-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New report</h2>
      <InputField id={`${id}-name`} label="Name" name="name" required maxLength={200} spellCheck={false} hint="The name scripts publish to." />
      <label htmlFor={`${id}-description`}>Description (optional)</label>
      <textarea id={`${id}-description`} name="description" rows={2} maxLength={2000} />
      <InputField
        id={`${id}-retention`}
        label="Retention (days)"
        name="retentionDays"
        type="number"
        min={0}
        max={36500}
        step={1}
        placeholder={String(DEFAULT_RETENTION_DAYS)}
        hint={`Entries older than this are deleted; 0 keeps them forever. Empty: ${DEFAULT_RETENTION_DAYS}.`}
      />
      <ErrorMessage message={action.error} />
      <button type="submit" className="button" disabled={action.busy}>
        {action.busy ? 'Creating…' : 'Create report'}
      </button>
    </form>
  );
}
