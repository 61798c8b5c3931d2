import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { reportPath } from '../router/routes';
import { retentionText, type Report } from './report-types';

export interface ReportTableProps {
  readonly reports: readonly Report[];
  /** Deletes the report and its entries; a failure's message shows beside the confirmation. */
  readonly onDelete: (report: Report) => Promise<void>;
}

/** One row per report: name (to its page), description, how many columns, retention, last change, Delete. */
export function ReportTable({ reports, onDelete }: ReportTableProps) {
  return (
    <div className="table-scroll">
      <table className="table rep-table" aria-label="Reports">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">Columns</th>
            <th scope="col">Retention</th>
            <th scope="col">Updated</th>
            <th scope="col" className="rep-actions-head">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {reports.map((report) => (
            <tr key={report.id}>
              <td className="rep-name">
                <a href={href(reportPath(report.id))}>{report.name}</a>
              </td>
              <td className="rep-description">{report.description ?? <span className="muted">—</span>}</td>
              <td className="nowrap" title={report.columns.map((column) => column.name).join(', ')}>
                {report.columns.length}
              </td>
              <td className="nowrap">{retentionText(report.retentionDays)}</td>
              <td>
                <DateTime value={report.updatedAt} />
              </td>
              <td>
                <ConfirmButton
                  label="Delete"
                  name={`Delete ${report.name}`}
                  question={<>Delete “{report.name}” and all its entries?</>}
                  busyLabel="Deleting…"
                  onConfirm={() => onDelete(report)}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
