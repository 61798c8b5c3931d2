import { useId, useState, type FormEvent } from 'react';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { downloadExport, PASSPHRASE_MIN_LENGTH, textOf } from './imex-api';

/**
 * **Export configuration**: the acting account's configuration as one JSON document, saved as a file. Secrets
 * (device password hashes, keys, webhook secrets) go in only when asked, sealed with a passphrase typed here.
 */
export function ExportPanel() {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [withSecrets, setWithSecrets] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const passphrase = withSecrets ? textOf(new FormData(event.currentTarget).get('passphrase')) : undefined;
    if (passphrase !== undefined && [...passphrase].length < PASSPHRASE_MIN_LENGTH) {
      setError(`The passphrase needs at least ${PASSPHRASE_MIN_LENGTH} characters.`);
      return;
    }
    await run(() => downloadExport(api, passphrase));
  };

  return (
    <form className="card form imex-card" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Export</h2>
      <p className="muted">
        Services, triggers, endpoints with their stored objects, security and bootstrap configurations, geofences, reports, alert rules and the list of files of this
        account, as one JSON document. File contents are not in it.
      </p>
      <label className="checkbox-label">
        <input type="checkbox" checked={withSecrets} onChange={(event) => setWithSecrets(event.target.checked)} /> Include secrets, sealed with a passphrase
      </label>
      {withSecrets ? (
        <>
          <label htmlFor={`${id}-passphrase`}>Passphrase</label>
          <input id={`${id}-passphrase`} name="passphrase" type="password" autoComplete="new-password" aria-describedby={`${id}-passphrase-hint`} />
          <p id={`${id}-passphrase-hint`} className="muted field-hint">
            At least {PASSPHRASE_MIN_LENGTH} characters. Device password hashes, DTLS and bootstrap keys, LoRa and webhook secrets are sealed with it; the import
            needs the same passphrase. It is not stored anywhere.
          </p>
        </>
      ) : (
        <p className="muted field-hint">Without secrets, device passwords, keys and webhook secrets stay behind.</p>
      )}
      <ErrorMessage message={error} />
      <div className="imex-buttons">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Exporting…' : 'Export configuration'}
        </button>
      </div>
    </form>
  );
}
