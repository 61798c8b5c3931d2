import { useId, useState } from 'react';
import { call, type ApiClient } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { saveBlob } from '../files/file-api';
import { useSession } from '../session/session';
import type { EntryQuery } from './report-query';
import { csvFileName, type Report } from './report-types';

/**
 * Fetches `GET /report/details/csv` for the report and range (the API needs the bearer header, so a plain link
 * cannot work) and saves it as `<name>.csv` from a `blob:` URL. Read as a Blob, so a BOM stays in the bytes.
 */
async function downloadCsv(api: ApiClient, report: Report, range: Pick<EntryQuery, 'from' | 'to'>, bom: boolean): Promise<void> {
  const query = { report: report.id, ...(range.from === '' ? {} : { from: range.from }), ...(range.to === '' ? {} : { to: range.to }), ...(bom ? { bom } : {}) };
  const blob = await call(api.GET('/report/details/csv', { params: { query }, parseAs: 'blob' }));
  saveBlob(blob, csvFileName(report.name), 'text/csv;charset=utf-8');
}

/** **Download CSV** of the entries in the page's time range, with or without a UTF-8 BOM. */
export function CsvDownload({ report, query }: { readonly report: Report; readonly query: EntryQuery }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, run } = useAction();
  const [bom, setBom] = useState(false);
  const ranged = query.from !== '' || query.to !== '';

  return (
    <div className="rep-download" role="group" aria-label="CSV download" aria-describedby={`${id}-hint`}>
      <div className="rep-download-row">
        <button type="button" className="button button-quiet" disabled={busy} onClick={() => void run(() => downloadCsv(api, report, query, bom))}>
          {busy ? 'Downloading…' : 'Download CSV'}
        </button>
        <label className="rep-check">
          <input type="checkbox" checked={bom} onChange={(event) => setBom(event.target.checked)} /> UTF-8 BOM for spreadsheets
        </label>
      </div>
      <p id={`${id}-hint`} className="muted field-hint">
        A header row (<span className="mono">time</span> and the columns), then one row per entry{ranged ? ' in this time range' : ''}: every page, not only this one.
      </p>
      <ErrorMessage message={error} />
    </div>
  );
}
