import { ErrorMessage } from '../components/error-message';
import { usePageTitle } from '../components/page-title';
import { useSession } from '../session/session';
import { ExportPanel } from './export-panel';
import { ImportForm } from './import-form';
import { ImportJobView } from './import-job-view';
import { useImportJob } from './use-import-job';
import './imex.css';

/**
 * `#/imex`: the acting account's configuration as a file (GET /imex/export), and a file imported into it
 * (POST /imex/import, a dry run first if wanted), with the job followed to its end (GET /imex/jobs/{id}).
 */
export function ImexPage() {
  usePageTitle('Import / export');
  const { api } = useSession();
  const { job, error, follow } = useImportJob(api);
  return (
    <section aria-labelledby="imex-title">
      <h1 id="imex-title">Import / export</h1>
      <div className="imex-panels">
        <ExportPanel />
        <ImportForm onStarted={follow} running={job?.state === 'running'} />
      </div>
      <ErrorMessage message={error} />
      {job === undefined ? null : <ImportJobView job={job} />}
    </section>
  );
}
