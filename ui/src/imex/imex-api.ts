// The import/export calls (docs/imex.md). The export is saved from a Blob (the API needs the bearer header, so
// no plain link); the import sends the chosen file's bytes as they are, so the service's own check of the
// document (whole JSON, its format and version) is the one that speaks.
import { call, type ApiClient, type ApiData } from '../api/client';
import type { paths } from '../api/schema';
import { saveBlob } from '../files/file-api';

/** An import job as the API answers it: state, counts, the first refusals. */
export type ImportJob = ApiData<'/imex/jobs/{id}'>;
type ImportBody = paths['/imex/import']['post']['requestBody']['content']['application/json'];

/** `attachment; filename="x.json"` → `x.json`; the fallback when the header is missing or has no name. */
function attachmentName(disposition: string | null, fallback: string): string {
  const match = /filename="([^"]+)"/.exec(disposition ?? '');
  return match?.[1] ?? fallback;
}

/** The header the passphrase of sealed secrets travels in (never the URL: it would land in access logs). */
const PASSPHRASE_HEADER = 'x-iotbridge-passphrase';
/** The shortest passphrase the service seals an export with. */
export const PASSPHRASE_MIN_LENGTH = 12;

/** A text field of a form's data ('' when absent or a file). */
export function textOf(value: FormDataEntryValue | null): string {
  return typeof value === 'string' ? value : '';
}

/** The passphrase header, when one was typed. */
function passphraseHeaders(passphrase: string | undefined): Record<string, string> {
  return passphrase ? { [PASSPHRASE_HEADER]: passphrase } : {};
}

/**
 * Fetches `GET /imex/export` and saves it under the name the service gives it (the account and the date). With a
 * passphrase, the export holds the account's secrets sealed with it (`?secrets=true`, docs/imex.md "Secrets").
 */
export async function downloadExport(api: ApiClient, passphrase?: string): Promise<void> {
  const request = api.GET('/imex/export', {
    parseAs: 'blob',
    params: { query: passphrase === undefined ? {} : { secrets: true } },
    headers: passphraseHeaders(passphrase),
  });
  const blob = await call(request);
  const { response } = await request;
  saveBlob(blob, attachmentName(response.headers.get('content-disposition'), 'iotbridge-export.json'), 'application/json');
}

/**
 * `POST /imex/import(?dryRun=true)` with the file as the JSON body, untouched (a file that is not JSON gets the
 * API's `IOTB_IMPORT_DOCUMENT` message); the passphrase opens a document's sealed secrets. Answers the job:
 * finished (200) or still running (202).
 */
export function startImport(api: ApiClient, file: Blob, dryRun: boolean, passphrase?: string): Promise<ImportJob> {
  return call(
    api.POST('/imex/import', {
      params: { query: dryRun ? { dryRun } : {} },
      headers: passphraseHeaders(passphrase),
      // The bytes go as they are; openapi-fetch sets `content-type: application/json` for the body.
      body: file as unknown as ImportBody,
      bodySerializer: () => file,
    }),
  );
}

/** `GET /imex/jobs/{id}`: the job's progress and counts now. */
export function loadJob(api: ApiClient, id: string): Promise<ImportJob> {
  return call(api.GET('/imex/jobs/{id}', { params: { path: { id } } }));
}
