import { call, type ApiClient } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { saveBlob } from '../files/file-api';
import { useSession } from '../session/session';
import { apiFilters, isFiltered, type LogQuery } from './log-query';

/**
 * Fetches `GET /log/csv` with the page's filters (the API needs the bearer header, so a plain link cannot work)
 * and saves it as `log.csv` from a `blob:` URL. Every matching entry, not only the page shown.
 */
async function downloadCsv(api: ApiClient, query: LogQuery): Promise<void> {
  const blob = await call(api.GET('/log/csv', { params: { query: apiFilters(query) }, parseAs: 'blob' }));
  saveBlob(blob, 'log.csv', 'text/csv;charset=utf-8');
}

/** **Download CSV** of every entry matching the filters. */
export function LogCsvDownload({ query }: { readonly query: LogQuery }) {
  const { api } = useSession();
  const { busy, error, run } = useAction();
  return (
    <div className="log-download">
      <button
        type="button"
        className="button button-quiet"
        disabled={busy}
        aria-describedby="log-download-hint"
        onClick={() => void run(() => downloadCsv(api, query))}
      >
        {busy ? 'Downloading…' : 'Download CSV'}
      </button>
      <span id="log-download-hint" className="muted field-hint">
        Every entry {isFiltered(query) ? 'matching these filters' : 'of the log'}, newest first: time, level, source, endpointKey, triggerId, message.
      </span>
      <ErrorMessage message={error} />
    </div>
  );
}
