import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import type { AccountStatus } from './account-status';

/** Suspends an account with a reason (`POST /super/accounts/{id}/suspend`): its devices are refused, its triggers stop. */
export function SuspendForm({ accountId, name, onDone }: { readonly accountId: string; readonly name: string; readonly onDone: (status: AccountStatus) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [reason, setReason] = useState('');

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (reason.trim() === '') {
      setError('Give a reason: the account’s people and the audit log see it.');
      return;
    }
    const status = await run(() => call(api.POST('/super/accounts/{id}/suspend', { params: { path: { id: accountId } }, body: { reason: reason.trim() } })));
    if (status !== undefined) onDone(status);
  };

  return (
    <form className="form super-action-form" aria-label={`Suspend ${name}`} onSubmit={(event) => void submit(event)}>
      <label htmlFor={`${id}-reason`}>Reason for suspending {name}</label>
      <input id={`${id}-reason`} value={reason} maxLength={500} onChange={(event) => setReason(event.target.value)} aria-describedby={`${id}-hint`} autoFocus />
      <p id={`${id}-hint`} className="muted field-hint">
        Its devices are refused, its triggers do not run, its tokens may only read. Its sub-accounts are not suspended.
      </p>
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Suspending…' : 'Suspend account'}
      </button>
    </form>
  );
}
