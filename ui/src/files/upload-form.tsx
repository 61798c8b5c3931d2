import { useId, useRef, useState, type FormEvent } from 'react';
import { messageOf } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { useSession } from '../session/session';
import { send, splitTags, type FileInfo, type Progress, type Transfer, type Uploaded } from './file-api';
import { TransferProgress } from './progress-bar';

/**
 * Uploads one or several files in one `POST /file/upload` (all or nothing), each with the same optional
 * version, content type and tags; a name only for a single file (several keep their own names).
 */
export function UploadForm({ onUploaded }: { readonly onUploaded: (files: readonly FileInfo[]) => void }) {
  const id = useId();
  const { credentials } = useSession();
  const [count, setCount] = useState(0);
  const [progress, setProgress] = useState<Progress | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const transfer = useRef<Transfer<Uploaded> | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const files = form.getAll('file').filter((item): item is File => item instanceof File && item.name !== '');
    if (files.length === 0) {
      setError('Choose a file to upload.');
      return;
    }
    // The API applies the fields sent before a file part to that file: repeat them before each one.
    const body = new FormData();
    const name = formText(form, 'name').trim();
    const version = formText(form, 'version').trim();
    const contentType = formText(form, 'contentType').trim();
    const tags = splitTags(formText(form, 'tags'));
    for (const file of files) {
      if (files.length === 1 && name !== '') body.append('name', name);
      if (version !== '') body.append('version', version);
      if (contentType !== '') body.append('contentType', contentType);
      for (const tag of tags) body.append('tags', tag);
      body.append('file', file, file.name);
    }
    setError(undefined);
    setProgress({ loaded: 0, total: files.reduce((sum, file) => sum + file.size, 0) });
    const started = send<Uploaded>(credentials, 'POST', '/file/upload', body, setProgress);
    transfer.current = started;
    try {
      const uploaded = await started.done;
      formElement.reset();
      setCount(0);
      onUploaded(uploaded.files);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      transfer.current = undefined;
      setProgress(undefined);
    }
  };

  const busy = progress !== undefined;
  return (
    <form className="card form upload-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Upload</h2>
      <label htmlFor={`${id}-file`}>Files to upload</label>
      <input id={`${id}-file`} name="file" type="file" multiple required onChange={(event) => setCount(event.target.files?.length ?? 0)} />
      <label htmlFor={`${id}-name`}>Name (optional)</label>
      <input id={`${id}-name`} name="name" maxLength={255} spellCheck={false} disabled={count > 1} placeholder="firmware/app-2.0.0.bin" aria-describedby={`${id}-name-hint`} />
      <p id={`${id}-name-hint`} className="muted field-hint">
        {count > 1 ? 'Several files keep their own names.' : 'Default: the file’s own name. Use / for folders.'}
      </p>
      <label htmlFor={`${id}-version`}>Version (optional)</label>
      <input id={`${id}-version`} name="version" maxLength={64} spellCheck={false} />
      <label htmlFor={`${id}-type`}>Content type (optional)</label>
      <input id={`${id}-type`} name="contentType" spellCheck={false} placeholder="application/octet-stream" aria-describedby={`${id}-type-hint`} />
      <p id={`${id}-type-hint`} className="muted field-hint">
        Default: what the browser says the file is.
      </p>
      <label htmlFor={`${id}-tags`}>Tags (optional)</label>
      <input id={`${id}-tags`} name="tags" spellCheck={false} placeholder="fw, stable" aria-describedby={`${id}-tags-hint`} />
      <p id={`${id}-tags-hint`} className="muted field-hint">
        Separated by commas.
      </p>
      {progress === undefined ? null : <TransferProgress label="Uploading" progress={progress} />}
      <ErrorMessage message={error} />
      <div className="button-row">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
        {busy ? (
          <button type="button" className="button button-quiet" onClick={() => transfer.current?.abort()}>
            Cancel upload
          </button>
        ) : null}
      </div>
    </form>
  );
}
