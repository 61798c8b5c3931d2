import { useId, useState, type ChangeEvent, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import type { LicenceStatus } from './licence-types';

/**
 * Installs a licence: its text pasted, or read from a file into the same box, then `PUT /licence`. A licence
 * that does not verify shows the API's message (`IOTB_LICENCE_INVALID`) and nothing is stored.
 */
export function LicenceForm({ onInstalled }: { readonly onInstalled: (status: LicenceStatus) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [text, setText] = useState('');
  const [installed, setInstalled] = useState(false);

  const readFile = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    if (file !== undefined) setText(await file.text());
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setInstalled(false);
    const licence = text.trim();
    if (licence === '') {
      setError('Paste the licence text or choose the licence file.');
      return;
    }
    const status = await run(() => call(api.PUT('/licence', { body: { licence } })));
    if (status === undefined) return;
    setText('');
    setInstalled(true);
    onInstalled(status);
  };

  return (
    <form className="card form" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Install a licence</h2>
      <label htmlFor={`${id}-text`}>Licence text</label>
      <textarea
        id={`${id}-text`}
        className="mono"
        rows={5}
        spellCheck={false}
        value={text}
        onChange={(event) => setText(event.target.value)}
        aria-describedby={`${id}-hint`}
      />
      <p id={`${id}-hint`} className="muted field-hint">
        One line, <span className="mono">payload.signature</span>, as the vendor sent it. It replaces the installed licence at once, on every node within a minute.
      </p>
      <label htmlFor={`${id}-file`}>Or a licence file</label>
      <input id={`${id}-file`} type="file" accept=".txt,.lic,text/plain" onChange={(event) => void readFile(event)} />
      <ErrorMessage message={error} />
      {installed ? (
        <p className="notice" role="status">
          The licence was installed.
        </p>
      ) : null}
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Installing…' : 'Install licence'}
      </button>
    </form>
  );
}
