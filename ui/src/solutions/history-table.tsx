import { DateTime } from '../components/date-time';
import type { HistoryEntry } from './solutions-api';

/** Installs, upgrades and uninstalls, newest first: template, version, action, outcome, when and by whom. */
export function HistoryTable({ entries }: { readonly entries: readonly HistoryEntry[] }) {
  return (
    <div className="table-scroll">
      <table className="table table-compact" aria-label="History">
        <thead>
          <tr>
            <th scope="col">Template</th>
            <th scope="col">Version</th>
            <th scope="col">Action</th>
            <th scope="col">Outcome</th>
            <th scope="col">At</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id}>
              <td>{entry.template}</td>
              <td className="mono">{entry.version}</td>
              <td>{entry.action}</td>
              <td>
                <span className={`sol-outcome sol-outcome-${entry.outcome}`}>{entry.outcome}</span>
              </td>
              <td>
                <DateTime value={entry.at} />
              </td>
              <td className="sol-by">{entry.by}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
