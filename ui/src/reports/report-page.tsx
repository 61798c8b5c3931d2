import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href } from '../router/hash-location';
import { useSession } from '../session/session';
import { ReportEntries } from './report-entries';
import { readEntryQuery } from './report-query';
import { ReportScheduleForm } from './report-schedule-form';
import { ReportSettingsForm } from './report-settings-form';
import { retentionText, type Report } from './report-types';
import './reports.css';

const COUNT = new Intl.NumberFormat('en');

/**
 * `#/reports/<id>`: one report (`GET /reports/{ref}`): its fields and columns, name / description / retention
 * and the e-mail schedule edited (`PATCH`), its entries a page at a time within a time range, and the CSV of that range.
 */
export function ReportPage({ id, search }: { readonly id: string; readonly search: URLSearchParams }) {
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/reports/{ref}', { params: { path: { ref: id } } })), [api, id]);
  const loaded = useResource(load);
  // A change saved here shows at once; the PATCH answer has no entry count, so the loaded one stays.
  const [saved, setSaved] = useState<Report | undefined>(undefined);
  const report = saved === undefined ? loaded.data : { ...saved, entries: loaded.data?.entries };
  usePageTitle(report?.name ?? 'Report');
  const query = readEntryQuery(search);

  return (
    <section aria-labelledby="report-title">
      <p className="breadcrumb">
        <a href={href('/reports')}>Reports</a>
      </p>
      <h1 id="report-title" className="rep-title">
        {report?.name ?? 'Report'}
      </h1>
      <ErrorMessage message={loaded.error} />
      {report === undefined ? (
        loaded.error === undefined ? <Loading what="the report" /> : null
      ) : (
        <>
          {saved === undefined ? null : (
            <p className="notice" role="status">
              Saved “{saved.name}”.
            </p>
          )}
          <div className="rep-panels">
            <div className="rep-summary">
              <ReportFields report={report} />
              <ReportColumns report={report} />
            </div>
            <div className="rep-forms">
              <ReportSettingsForm key={report.updatedAt} report={report} onSaved={setSaved} />
              <ReportScheduleForm key={`schedule-${report.updatedAt}`} report={report} onSaved={setSaved} />
            </div>
          </div>
          <ReportEntries report={report} query={query} />
        </>
      )}
    </section>
  );
}

function ReportFields({ report }: { readonly report: Report }) {
  return (
    <dl className="fields">
      <dt>Description</dt>
      <dd className="rep-description">{report.description ?? <span className="muted">none</span>}</dd>
      <dt>Entries</dt>
      <dd>{report.entries === undefined ? '…' : COUNT.format(report.entries)}</dd>
      <dt>Retention</dt>
      <dd>{retentionText(report.retentionDays)}</dd>
      <dt>Created</dt>
      <dd>
        <DateTime value={report.createdAt} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <DateTime value={report.updatedAt} />
      </dd>
      <dt>Id</dt>
      <dd className="mono rep-id">{report.id}</dd>
    </dl>
  );
}

/** The columns in their order (the CSV's, after `time`), each with the type its first value gave it. */
function ReportColumns({ report }: { readonly report: Report }) {
  return (
    <div className="rep-columns">
      <h2 id="report-columns-title">Columns</h2>
      {report.columns.length === 0 ? (
        <p className="muted">None yet: the first entry’s keys become the columns.</p>
      ) : (
        <ol className="rep-column-list" aria-labelledby="report-columns-title">
          {report.columns.map((column) => (
            <li key={column.name} className="rep-column">
              <span className="mono rep-column-name">{column.name}</span> <span className="rep-type">{column.type}</span>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
