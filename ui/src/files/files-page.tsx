import { useCallback, useId, useMemo, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href, navigate } from '../router/hash-location';
import { filePath } from '../router/routes';
import { useSession } from '../session/session';
import { formatBytes, type FileInfo } from './file-api';
import { FILES_PAGE_SIZE, filesHref, readFileQuery, type FileQuery } from './file-query';
import { UploadForm } from './upload-form';
import './files.css';

/** The files of the acting account: filtered by name prefix and tag, a page at a time, and the upload form. */
export function FilesPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Files');
  const { api } = useSession();
  const query = useMemo(() => readFileQuery(search), [search]);
  const { prefix, tag, offset } = query;
  const load = useCallback(
    () => call(api.GET('/file', { params: { query: { limit: FILES_PAGE_SIZE, offset, prefix: prefix === '' ? undefined : prefix, tag: tag === '' ? undefined : tag } } })),
    [api, prefix, tag, offset],
  );
  const files = useResource(load);
  const [uploaded, setUploaded] = useState<readonly FileInfo[]>([]);
  const { reload } = files;

  const onUploaded = (stored: readonly FileInfo[]) => {
    setUploaded(stored);
    reload();
  };

  return (
    <section aria-labelledby="files-title">
      <h1 id="files-title">Files</h1>
      <div className="split">
        <div className="split-main">
          <FileFilterForm key={search.toString()} query={query} />
          <ErrorMessage message={files.error} />
          {uploaded.length === 0 ? null : (
            <p className="notice" role="status">
              Uploaded {uploaded.map((file) => `“${file.name}”`).join(', ')}.
            </p>
          )}
          {files.data === undefined ? (
            files.error === undefined ? <Loading what="files" /> : null
          ) : (
            <div aria-busy={files.loading}>
              <Pager total={files.data.total} offset={files.data.offset} limit={FILES_PAGE_SIZE} noun="files" hrefAt={(at) => filesHref({ ...query, offset: at })} />
              {files.data.items.length === 0 ? (
                <p className="muted">{prefix === '' && tag === '' ? 'No files yet: upload one.' : 'No file matches.'}</p>
              ) : (
                <FileTable files={files.data.items} />
              )}
            </div>
          )}
        </div>
        <div className="split-side">
          <UploadForm onUploaded={onUploaded} />
        </div>
      </div>
    </section>
  );
}

/** Name prefix and tag; applying it goes to the first page of the filtered list. */
function FileFilterForm({ query }: { readonly query: FileQuery }) {
  const id = useId();
  const [prefix, setPrefix] = useState(query.prefix);
  const [tag, setTag] = useState(query.tag);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    navigate(filesHref({ prefix, tag: tag.trim(), offset: 0 }));
  };
  return (
    <form className="filter-form" role="search" aria-label="Filter files" onSubmit={submit}>
      <div className="field">
        <label htmlFor={`${id}-prefix`}>Name starts with</label>
        <input id={`${id}-prefix`} value={prefix} onChange={(event) => setPrefix(event.target.value)} placeholder="firmware/" spellCheck={false} />
      </div>
      <div className="field">
        <label htmlFor={`${id}-tag`}>Tag</label>
        <input id={`${id}-tag`} value={tag} onChange={(event) => setTag(event.target.value)} placeholder="stable" spellCheck={false} />
      </div>
      <div className="filter-actions">
        <button type="submit" className="button">
          Filter
        </button>
        {query.prefix !== '' || query.tag !== '' ? (
          <a className="button button-quiet" href={filesHref({})}>
            Clear
          </a>
        ) : null}
      </div>
    </form>
  );
}

/** One row per file: name (to its page), size, version, tags (to the list filtered by one), SHA-256, updated. */
function FileTable({ files }: { readonly files: readonly FileInfo[] }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Files">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Size</th>
            <th scope="col">Version</th>
            <th scope="col">Tags</th>
            <th scope="col">SHA-256</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {files.map((file) => (
            <tr key={file.name}>
              <td className="mono file-name">
                <a href={href(filePath(file.name))}>{file.name}</a>
              </td>
              <td className="nowrap">{formatBytes(file.size)}</td>
              <td>{file.version ?? <span className="muted">none</span>}</td>
              <td>
                <FileTags tags={file.tags} />
              </td>
              <td className="mono sha256" title={file.sha256}>
                {file.sha256}
              </td>
              <td>
                <DateTime value={file.updatedAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A file's tags as chips, each linking to the files that have it. */
export function FileTags({ tags }: { readonly tags: readonly string[] }) {
  if (tags.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="tag-list">
      {tags.map((tag) => (
        <li key={tag}>
          <a className="tag" href={filesHref({ tag })} title={`Files tagged ${tag}`}>
            {tag}
          </a>
        </li>
      ))}
    </ul>
  );
}
