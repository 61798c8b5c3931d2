import { useId, useState, type FormEvent } from 'react';
import { call, messageOf } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';
import { useSession } from '../session/session';
import { fileRoute, send, splitTags, type FileInfo, type Progress } from './file-api';
import { TransferProgress } from './progress-bar';

/**
 * Replaces the content (`PUT /file/{name}/content`): the chosen file's bytes, its type as the content type,
 * and the version and tags given here (a PUT sets the metadata as given: what is left empty is cleared).
 */
export function ReplaceContentForm({ file, onReplaced }: { readonly file: FileInfo; readonly onReplaced: (file: FileInfo) => void }) {
  const id = useId();
  const { credentials } = useSession();
  const [progress, setProgress] = useState<Progress | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const content = form.get('content');
    if (!(content instanceof File) || content.name === '') {
      setError('Choose the new content.');
      return;
    }
    const query = new URLSearchParams();
    const version = formText(form, 'version').trim();
    if (version !== '') query.set('version', version);
    const tags = splitTags(formText(form, 'tags'));
    if (tags.length > 0) query.set('tags', tags.join(','));
    const search = query.toString();
    setError(undefined);
    setProgress({ loaded: 0, total: content.size });
    try {
      const path = `${fileRoute(file.name, '/content')}${search === '' ? '' : `?${search}`}`;
      const replaced = await send<FileInfo>(credentials, 'PUT', path, content, setProgress, content.type === '' ? 'application/octet-stream' : content.type).done;
      formElement.reset();
      onReplaced(replaced);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setProgress(undefined);
    }
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Replace content</h2>
      <InputField id={`${id}-content`} label="New content" name="content" type="file" required />
      <InputField id={`${id}-version`} label="Version" name="version" maxLength={64} defaultValue={file.version ?? ''} spellCheck={false} />
      <InputField id={`${id}-tags`} label="Tags" hint="Links made before point to the old content and stop working." name="tags" defaultValue={file.tags.join(', ')} spellCheck={false} />
      {progress === undefined ? null : <TransferProgress label="Uploading" progress={progress} />}
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={progress !== undefined}>
        {progress === undefined ? 'Replace' : 'Replacing…'}
      </button>
    </form>
  );
}

/** Edits the metadata only (`PATCH /file/{name}`): content type, version (empty clears it), tags. */
export function MetadataForm({ file, onSaved }: { readonly file: FileInfo; readonly onSaved: (file: FileInfo) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const version = formText(form, 'version').trim();
    const saved = await run(() =>
      call(
        api.PATCH('/file/{name}', {
          params: { path: { name: file.name } },
          body: { contentType: formText(form, 'contentType').trim(), version: version === '' ? null : version, tags: splitTags(formText(form, 'tags')) },
        }),
      ),
    );
    if (saved !== undefined) onSaved(saved);
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Metadata</h2>
      <InputField id={`${id}-type`} label="Content type" name="contentType" required defaultValue={file.contentType} spellCheck={false} />
      <InputField id={`${id}-version`} label="Version" hint="Empty: no version." name="version" maxLength={64} defaultValue={file.version ?? ''} spellCheck={false} />
      <InputField id={`${id}-tags`} label="Tags" hint="Separated by commas; replaces the list." name="tags" defaultValue={file.tags.join(', ')} spellCheck={false} />
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Saving…' : 'Save metadata'}
      </button>
    </form>
  );
}
