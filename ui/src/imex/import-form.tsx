import { useId, type FormEvent } from 'react';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { startImport, textOf, type ImportJob } from './imex-api';

/**
 * A JSON file and two buttons: **Check (dry run)** validates every item and counts what would change, writing
 * nothing; **Import** writes. Either hands the job the API answers to `onStarted`.
 */
export function ImportForm({ onStarted, running }: { readonly onStarted: (job: ImportJob | undefined) => void; readonly running: boolean }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const dryRun = (event.nativeEvent as SubmitEvent).submitter?.getAttribute('value') === 'dry-run';
    const form = new FormData(event.currentTarget);
    const file = form.get('document');
    const passphrase = textOf(form.get('passphrase'));
    if (!(file instanceof File) || file.name === '') {
      setError('Choose a JSON file to import.');
      return;
    }
    onStarted(undefined);
    const job = await run(() => startImport(api, file, dryRun, passphrase === '' ? undefined : passphrase));
    if (job !== undefined) onStarted(job);
  };

  const disabled = busy || running;
  return (
    <form className="card form imex-card" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Import</h2>
      <label htmlFor={`${id}-file`}>Document (JSON)</label>
      <input id={`${id}-file`} name="document" type="file" accept=".json,application/json" aria-describedby={`${id}-hint`} />
      <p id={`${id}-hint`} className="muted field-hint">
        A document of <span className="mono">GET /imex/export</span>, from this installation or another. Items are matched by name (endpoints by service and key):
        equal ones are left unchanged, so importing twice changes nothing.
      </p>
      <label htmlFor={`${id}-passphrase`}>Passphrase (optional)</label>
      <input id={`${id}-passphrase`} name="passphrase" type="password" autoComplete="off" aria-describedby={`${id}-passphrase-hint`} />
      <p id={`${id}-passphrase-hint`} className="muted field-hint">
        Only for a document exported with its secrets: the passphrase it was sealed with.
      </p>
      <ErrorMessage message={error} />
      <div className="imex-buttons">
        <button type="submit" name="mode" value="dry-run" className="button button-quiet" disabled={disabled}>
          Check (dry run)
        </button>
        <button type="submit" name="mode" value="import" className="button" disabled={disabled}>
          {busy ? 'Sending…' : 'Import'}
        </button>
      </div>
    </form>
  );
}
