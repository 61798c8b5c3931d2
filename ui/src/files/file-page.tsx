import { useCallback, useState } from 'react';
import { call, messageOf } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { downloadContent, formatBytes, saveBlob, type FileInfo, type Progress } from './file-api';
import { FileLinks } from './file-links';
import { filesHref } from './file-query';
import { FileTags } from './files-page';
import { MetadataForm, ReplaceContentForm } from './file-forms';
import { TransferProgress } from './progress-bar';
import './files.css';

/** One file: its metadata, download, replace, edit, delete, and download links for devices. */
export function FilePage({ name }: { readonly name: string }) {
  usePageTitle(name);
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/file/{name}', { params: { path: { name } } })), [api, name]);
  const info = useResource(load);
  // A change made here shows at once; the next load replaces it.
  const [changed, setChanged] = useState<FileInfo | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const file = changed ?? info.data;

  const onChanged = (next: FileInfo, what: string) => {
    setChanged(next);
    setNotice(what);
  };

  return (
    <section aria-labelledby="file-title">
      <p className="breadcrumb">
        <a href={filesHref({})}>Files</a>
      </p>
      <h1 id="file-title" className="file-title">
        <span className="mono">{name}</span>
      </h1>
      <ErrorMessage message={info.error} />
      {file === undefined ? (
        info.error === undefined ? <Loading what="the file" /> : null
      ) : (
        <>
          {notice === undefined ? null : (
            <p className="notice" role="status">
              {notice}
            </p>
          )}
          <FileFields file={file} />
          <FileActions file={file} />
          <div className="file-panels">
            <ReplaceContentForm key={`replace-${file.updatedAt}`} file={file} onReplaced={(next) => onChanged(next, `Replaced the content: ${formatBytes(next.size)}, SHA-256 ${next.sha256}.`)} />
            <MetadataForm key={file.updatedAt} file={file} onSaved={(next) => onChanged(next, 'Saved the metadata.')} />
          </div>
          <FileLinks name={file.name} />
        </>
      )}
    </section>
  );
}

function FileFields({ file }: { readonly file: FileInfo }) {
  return (
    <dl className="fields">
      <dt>Size</dt>
      <dd>
        {formatBytes(file.size)} <span className="muted">({file.size.toLocaleString('en')} bytes)</span>
      </dd>
      <dt>SHA-256</dt>
      <dd className="mono sha256" data-testid="file-sha256">
        {file.sha256}
      </dd>
      <dt>Content type</dt>
      <dd className="mono">{file.contentType}</dd>
      <dt>Version</dt>
      <dd>{file.version ?? <span className="muted">none</span>}</dd>
      <dt>Tags</dt>
      <dd>
        <FileTags tags={file.tags} />
      </dd>
      <dt>Created</dt>
      <dd>
        <DateTime value={file.createdAt} />
        {file.createdBy === null ? null : (
          <>
            {' '}
            by <span className="mono">{file.createdBy}</span>
          </>
        )}
      </dd>
      <dt>Updated</dt>
      <dd>
        <DateTime value={file.updatedAt} />
      </dd>
    </dl>
  );
}

/** Download (fetched with the token, then saved) and delete (after a confirmation). */
function FileActions({ file }: { readonly file: FileInfo }) {
  const { api } = useSession();
  const [progress, setProgress] = useState<Progress | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);

  const download = async () => {
    setError(undefined);
    setProgress({ loaded: 0, total: file.size });
    try {
      saveBlob(await downloadContent(api, file.name, file.size, setProgress), file.name, file.contentType);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setProgress(undefined);
    }
  };

  const remove = async () => {
    setError(undefined);
    setDeleting(true);
    try {
      await call(api.DELETE('/file/{name}', { params: { path: { name: file.name } } }));
      navigate(filesHref({}));
    } catch (failure) {
      setError(messageOf(failure));
      setDeleting(false);
      setConfirming(false);
    }
  };

  return (
    <div className="file-actions">
      <div className="button-row">
        <button type="button" className="button" onClick={() => void download()} disabled={progress !== undefined}>
          {progress === undefined ? 'Download' : 'Downloading…'}
        </button>
        {confirming ? null : (
          <button type="button" className="button button-danger" onClick={() => setConfirming(true)}>
            Delete…
          </button>
        )}
      </div>
      {progress === undefined ? null : <TransferProgress label="Downloading" progress={progress} />}
      {confirming ? (
        <div className="confirm" role="group" aria-label="Confirm deletion">
          <p>
            Delete <span className="mono">{file.name}</span>? Devices downloading it through a link get an error from then on.
          </p>
          <div className="button-row">
            <button type="button" className="button button-danger" onClick={() => void remove()} disabled={deleting}>
              {deleting ? 'Deleting…' : 'Delete file'}
            </button>
            <button type="button" className="button button-quiet" onClick={() => setConfirming(false)} disabled={deleting}>
              Keep it
            </button>
          </div>
        </div>
      ) : null}
      <ErrorMessage message={error} />
    </div>
  );
}
