import { useEffect, useId, useState, type FormEvent } from 'react';
import { call, messageOf } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { formatBytes } from '../files/file-api';
import { useSession } from '../session/session';
import { importCsv } from './location-api';
import type { ImportFormat, ImportStatus, LocationService } from './location-types';

const COUNT = new Intl.NumberFormat('en');
/** How often the progress of a running import is asked for. */
const PROGRESS_EVERY_MS = 1000;

/**
 * Imports a CSV file into an embedded service: OpenCelliD's cell format or Wi-Fi access points
 * (`mac,lon,lat,range`), the file's bytes as the raw body. While it runs, the service's own answer gives the
 * rows read so far; at the end the rows, the rejected lines and the first errors show.
 */
export function ImportForm({ service, onImported }: { readonly service: LocationService; readonly onImported: () => void }) {
  const id = useId();
  const { api, credentials } = useSession();
  const [running, setRunning] = useState(false);
  const [progress, setProgress] = useState<ImportStatus | undefined>(undefined);
  const [result, setResult] = useState<ImportStatus | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    if (!running) return;
    const timer = window.setInterval(() => {
      call(api.GET('/location/services/{id}', { params: { path: { id: service.id } } })).then(
        (shown) => {
          if (shown.import?.state === 'running') setProgress(shown.import);
        },
        () => undefined,
      );
    }, PROGRESS_EVERY_MS);
    return () => window.clearInterval(timer);
  }, [running, api, service.id]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const file = form.get('file');
    if (!(file instanceof File) || file.name === '') {
      setError('Choose a CSV file to import.');
      return;
    }
    setError(undefined);
    setResult(undefined);
    setProgress(undefined);
    setRunning(true);
    try {
      setResult(await importCsv(credentials, service.id, file, formText(form, 'format') as ImportFormat, form.get('replace') !== null));
      element.reset();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setRunning(false);
      onImported();
    }
  };

  return (
    <form className="card form loc-import" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Import into “{service.name}”</h2>
      <label htmlFor={`${id}-file`}>CSV file</label>
      <input id={`${id}-file`} name="file" type="file" accept=".csv,text/csv,text/plain" required />
      <label htmlFor={`${id}-format`}>Format</label>
      <select id={`${id}-format`} name="format" defaultValue="opencellid" aria-describedby={`${id}-format-hint`}>
        <option value="opencellid">OpenCelliD cells</option>
        <option value="wifi">Wi-Fi access points</option>
      </select>
      <p id={`${id}-format-hint`} className="muted field-hint">
        Cells: <span className="mono">radio,mcc,net,area,cell,unit,lon,lat,range,…</span> (an OpenCelliD export, unzipped). Wi-Fi:{' '}
        <span className="mono">mac,lon,lat,range</span>. A header line is skipped; a bad line is counted and skipped.
      </p>
      <label className="loc-check">
        <input type="checkbox" name="replace" /> Replace the positions imported before
      </label>
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={running}>
        {running ? 'Importing…' : 'Import'}
      </button>
      {running && progress !== undefined ? (
        <p className="muted" role="status">
          {COUNT.format(progress.rows)} rows so far ({formatBytes(progress.bytes)} read)
        </p>
      ) : null}
      {result === undefined ? null : <ImportResult result={result} />}
    </form>
  );
}

function ImportResult({ result }: { readonly result: ImportStatus }) {
  return (
    <div className="loc-import-result" role="status">
      <p data-testid="import-result">
        {result.state === 'done' ? 'Imported' : 'Import failed after'} {COUNT.format(result.rows)} rows; {COUNT.format(result.rejected)} rejected.
      </p>
      {result.error === undefined ? null : <p className="error-message">{result.error}</p>}
      {result.firstErrors.length === 0 ? null : (
        <ul className="loc-import-errors" aria-label="First rejected lines">
          {result.firstErrors.map((line) => (
            <li key={line.line}>
              <span className="mono">line {line.line}</span>: {line.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
