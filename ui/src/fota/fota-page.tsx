import { useCallback } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href, navigate } from '../router/hash-location';
import { filePath, fotaJobPath } from '../router/routes';
import { useSession } from '../session/session';
import { JobForm } from './job-form';
import { JobProgress } from './job-progress';
import { JobState } from './job-state';
import { JOBS_PAGE_SIZE, fotaHref, selectorText, type FotaJob } from './fota-types';
import '../files/files.css';
import './fota.css';

/** The FOTA campaigns of the acting account, newest first, a page at a time, and the form to start one. */
export function FotaPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('FOTA');
  const { api } = useSession();
  const requested = Number(search.get('offset') ?? 0);
  const offset = Number.isInteger(requested) && requested > 0 ? requested : 0;
  const load = useCallback(() => call(api.GET('/fota/jobs', { params: { query: { limit: JOBS_PAGE_SIZE, offset } } })), [api, offset]);
  const jobs = useResource(load);

  return (
    <section aria-labelledby="fota-title">
      <h1 id="fota-title">FOTA</h1>
      <p className="muted">Firmware updates of LwM2M devices through their Firmware Update object (5), with a file of the repository.</p>
      <div className="split">
        <div className="split-main">
          <h2>Campaigns</h2>
          <ErrorMessage message={jobs.error} />
          {jobs.data === undefined ? (
            jobs.error === undefined ? <Loading what="campaigns" /> : null
          ) : (
            <div aria-busy={jobs.loading}>
              <Pager total={jobs.data.total} offset={jobs.data.offset} limit={JOBS_PAGE_SIZE} noun="campaigns" hrefAt={fotaHref} />
              {jobs.data.items.length === 0 ? <p className="muted">No campaigns yet.</p> : <JobTable jobs={jobs.data.items} />}
            </div>
          )}
        </div>
        <div className="split-side">
          <JobForm onStarted={(job) => navigate(href(fotaJobPath(job.id)))} />
        </div>
      </div>
    </section>
  );
}

function JobTable({ jobs }: { readonly jobs: readonly FotaJob[] }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Campaigns">
        <thead>
          <tr>
            <th scope="col">Campaign</th>
            <th scope="col">File</th>
            <th scope="col">Devices</th>
            <th scope="col">State</th>
            <th scope="col">Progress</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id}>
              <td className="nowrap">
                <a href={href(fotaJobPath(job.id))} title={`Campaign ${job.id}`}>
                  <DateTime value={job.createdAt} />
                </a>
              </td>
              <td className="mono file-name">
                <a href={href(filePath(job.file.name))}>{job.file.name}</a>
                {job.file.version === null ? null : <div className="muted small">{job.file.version}</div>}
              </td>
              <td>{selectorText(job)}</td>
              <td>
                <JobState state={job.state} />
              </td>
              <td>
                <JobProgress job={job} compact />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
