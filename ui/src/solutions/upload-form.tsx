import { useId, useState, type ChangeEvent, type FormEvent } from 'react';
import { messageOf } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { uploadTemplate, type Template } from './solutions-api';

/**
 * Adds a template: its JSON pasted or read from a file into the same box, or the name of a `.json` / `.zip`
 * file of the account's repository (`POST /solutions/templates`). The API's check says what is wrong.
 */
export function UploadForm({ onUploaded }: { readonly onUploaded: (template: Template) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [text, setText] = useState('');
  const [file, setFile] = useState('');
  const [added, setAdded] = useState<Template | undefined>(undefined);

  const readFile = async (event: ChangeEvent<HTMLInputElement>) => {
    const chosen = event.target.files?.[0];
    if (chosen !== undefined) setText(await chosen.text());
  };

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setAdded(undefined);
    const name = file.trim();
    if (name === '' && text.trim() === '') {
      setError('Paste the template, choose its file, or name a file of the repository.');
      return;
    }
    if (name === '') {
      try {
        JSON.parse(text);
      } catch (failure) {
        setError(`The template is not JSON: ${messageOf(failure)}`);
        return;
      }
    }
    const template = await run(() => uploadTemplate(api, name === '' ? { json: text } : { file: name }));
    if (template === undefined) return;
    setText('');
    setFile('');
    setAdded(template);
    onUploaded(template);
  };

  return (
    <form className="card form" aria-labelledby={`${id}-title`} onSubmit={(event) => void submit(event)}>
      <h2 id={`${id}-title`}>Add a template</h2>
      <label htmlFor={`${id}-text`}>Template (JSON)</label>
      <textarea id={`${id}-text`} className="mono" rows={8} spellCheck={false} value={text} onChange={(event) => setText(event.target.value)} aria-describedby={`${id}-hint`} />
      <p id={`${id}-hint`} className="muted field-hint">
        <span className="mono">{'{"name", "version", "description", "parameters", "document"}'}</span>: an export document with <span className="mono">{'{{parameter}}'}</span>{' '}
        placeholders (docs/templates.md).
      </p>
      <label htmlFor={`${id}-upload`}>Or a template file</label>
      <input id={`${id}-upload`} type="file" accept=".json,application/json" onChange={(event) => void readFile(event)} />
      <label htmlFor={`${id}-repo`}>Or a file of the repository</label>
      <input id={`${id}-repo`} className="mono" value={file} onChange={(event) => setFile(event.target.value)} placeholder="templates/greenhouse.zip" aria-describedby={`${id}-repo-hint`} />
      <p id={`${id}-repo-hint`} className="muted field-hint">
        A <span className="mono">.json</span>, or a <span className="mono">.zip</span> holding <span className="mono">template.json</span>; used instead of the box when given.
      </p>
      <ErrorMessage message={error} />
      {added === undefined ? null : (
        <p className="notice" role="status">
          Added {added.name} {added.version}.
        </p>
      )}
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Adding…' : 'Add template'}
      </button>
    </form>
  );
}
