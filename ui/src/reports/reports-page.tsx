import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { reportPath } from '../router/routes';
import { useSession } from '../session/session';
import { NewReportForm } from './new-report-form';
import { ReportTable } from './report-table';
import type { Report } from './report-types';
import './reports.css';

/** `#/reports`: the account's reports by name (`GET /reports`), the form of a new one, deletion after a confirmation. */
export function ReportsPage() {
  usePageTitle('Reports');
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/reports')), [api]);
  const reports = useResource(load);
  const [created, setCreated] = useState<Report | undefined>(undefined);
  const { reload } = reports;

  const remove = async (report: Report) => {
    await call(api.DELETE('/reports/{ref}', { params: { path: { ref: report.id } } }));
    if (created?.id === report.id) setCreated(undefined);
    reload();
  };

  const list = reports.data?.items;
  return (
    <section aria-labelledby="reports-title">
      <h1 id="reports-title">Reports</h1>
      <p className="muted">Tables of entries that trigger scripts publish, read here page by page or downloaded as CSV.</p>
      <div className="split">
        <div className="split-main">
          <ErrorMessage message={reports.error} />
          {list === undefined ? (
            reports.error === undefined ? <Loading what="reports" /> : null
          ) : list.length === 0 ? (
            <EmptyReports />
          ) : (
            <div aria-busy={reports.loading}>
              <ReportTable reports={list} onDelete={remove} />
            </div>
          )}
        </div>
        <div className="split-side">
          {created === undefined ? null : (
            <p className="notice" role="status">
              Created <a href={href(reportPath(created.id))}>“{created.name}”</a>.
            </p>
          )}
          <NewReportForm
            onCreated={(report) => {
              setCreated(report);
              reload();
            }}
          />
        </div>
      </div>
    </section>
  );
}

/** What an account without reports sees: where reports come from. */
function EmptyReports() {
  return (
    <div className="card rep-empty">
      <p>No reports yet.</p>
      <p>
        A trigger script creates one with its first entry, its columns taken from the entry’s keys:
      </p>
      <pre className="rep-code">
        <code>{"report.publish('daily-energy', { meter: event.endpointKey, kwh: event.data.kwh });"}</code>
      </pre>
      <p className="muted">Or create one with the form, to name its retention first.</p>
    </div>
  );
}
