// The file repository's calls that openapi-fetch cannot make with progress: uploads (XMLHttpRequest reports
// how much of the body has gone) and downloads (read as a stream, counted, then saved from an object URL).
// Every type is the generated one (schema.d.ts); only the URL of a call with a body of bytes is written here.
import { ApiError, bearer, call, type ApiClient, type ApiData, type ErrorBody } from '../api/client';
import type { paths } from '../api/schema';
import type { Credentials } from '../session/credentials';

/** A file's metadata as the API answers it. */
export type FileInfo = ApiData<'/file/{name}'>;
/** The answer to `POST /file/upload`. */
export type Uploaded = paths['/file/upload']['post']['responses'][201]['content']['application/json'];
/** A new download link: its token and URLs are in this answer only. */
export type FileLink = paths['/file/{name}/links']['post']['responses'][201]['content']['application/json'];
/** The body of `PATCH /file/{name}`. */
export type FileMetaPatch = paths['/file/{name}']['patch']['requestBody']['content']['application/json'];

/** How far a transfer is: bytes done of `total` (undefined while the size is not known). */
export interface Progress {
  readonly loaded: number;
  readonly total: number | undefined;
}

/** The path of a file's route: the name is one percent-encoded segment (its `/` travel as `%2F`). */
export function fileRoute(name: string, suffix = ''): string {
  return `/file/${encodeURIComponent(name)}${suffix}`;
}

function isErrorBody(value: unknown): value is ErrorBody {
  const error = (value as { error?: { message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.message === 'string';
}

/** An in-flight request with upload progress; `abort` ends it (the promise then rejects with status 0). */
export interface Transfer<T> {
  readonly done: Promise<T>;
  readonly abort: () => void;
}

/**
 * Sends `body` to `path` of this origin with XMLHttpRequest (fetch reports no upload progress), as the session's
 * credentials; a non-2xx answer rejects with an {@link ApiError} carrying the API's message.
 */
export function send<T>(
  credentials: Credentials,
  method: 'POST' | 'PUT',
  path: string,
  body: XMLHttpRequestBodyInit,
  onProgress: (progress: Progress) => void,
  contentType?: string,
): Transfer<T> {
  const request = new XMLHttpRequest();
  const done = new Promise<T>((resolve, reject) => {
    request.open(method, `${window.location.origin}${path}`);
    request.setRequestHeader('authorization', bearer(credentials.token, credentials.accountId));
    if (contentType !== undefined) request.setRequestHeader('content-type', contentType);
    request.upload.addEventListener('progress', (event) => onProgress({ loaded: event.loaded, total: event.lengthComputable ? event.total : undefined }));
    request.addEventListener('load', () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(request.responseText);
      } catch {
        parsed = undefined;
      }
      if (request.status >= 200 && request.status < 300) resolve(parsed as T);
      else if (isErrorBody(parsed)) reject(new ApiError(request.status, parsed.error.code, parsed.error.message));
      else reject(new ApiError(request.status, undefined, `The service answered ${request.status} ${request.statusText}`.trim()));
    });
    request.addEventListener('error', () => reject(new ApiError(0, undefined, 'The service could not be reached')));
    request.addEventListener('abort', () => reject(new ApiError(0, undefined, 'Cancelled')));
    request.send(body);
  });
  return { done, abort: () => request.abort() };
}

/** Fetches a file's content (the API needs the bearer header, so no plain link), counting the bytes as they come. */
export async function downloadContent(api: ApiClient, name: string, size: number, onProgress: (progress: Progress) => void): Promise<Blob> {
  const stream = await call(api.GET('/file/{name}/content', { params: { path: { name } }, parseAs: 'stream' }));
  if (stream === null) return new Blob([]);
  const reader = (stream as ReadableStream<Uint8Array>).getReader();
  const pieces: Uint8Array<ArrayBuffer>[] = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(new Uint8Array(value));
    loaded += value.byteLength;
    onProgress({ loaded, total: size });
  }
  return new Blob(pieces);
}

/** Hands `blob` to the browser as a download named after the last segment of `name`. */
export function saveBlob(blob: Blob, name: string, contentType: string): void {
  const url = URL.createObjectURL(new Blob([blob], { type: contentType }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name.split('/').pop() ?? name;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has started from the URL; it is freed once the click has been handled.
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const SIZE = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

/** 1536 → "1.5 KiB"; exact bytes below 1 KiB. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${SIZE.format(value)} ${units[unit]}`;
}

/** "fw, stable , site a" → ["fw", "stable", "site a"]: tags are separated by commas (a tag may hold spaces). */
export function splitTags(text: string): string[] {
  return [...new Set(text.split(',').map((tag) => tag.trim()).filter((tag) => tag !== ''))];
}
