import { call } from '../api/client';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { solutionPath } from '../router/routes';
import { useSession } from '../session/session';
import type { Installation, TemplateSummary, UninstallResult } from './solutions-api';

export interface InstalledRow {
  readonly installation: Installation;
  /** The newest version of the same name the account sees, when newer than the installed one. */
  readonly newer: TemplateSummary | undefined;
}

export interface InstallationTableProps {
  readonly rows: readonly InstalledRow[];
  readonly onUninstalled: (result: UninstallResult, installation: Installation) => void;
}

/** The account's installations: what and which version, since when, its items; Upgrade when a newer version exists, Uninstall. */
export function InstallationTable({ rows, onUninstalled }: InstallationTableProps) {
  const { api } = useSession();
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Installations">
        <thead>
          <tr>
            <th scope="col">Template</th>
            <th scope="col">Version</th>
            <th scope="col">Items</th>
            <th scope="col">Installed</th>
            <th scope="col">Updated</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ installation, newer }) => (
            <tr key={installation.id}>
              <td>{installation.template}</td>
              <td className="mono">{installation.version}</td>
              <td title={installation.items.map((item) => `${item.section}: ${item.item}`).join('\n')}>{installation.items.length}</td>
              <td>
                <DateTime value={installation.installedAt} />
                <span className="muted"> by {installation.by}</span>
              </td>
              <td>
                <DateTime value={installation.updatedAt} />
              </td>
              <td>
                <div className="sol-actions">
                  {newer === undefined ? null : (
                    <a className="button button-quiet" href={href(solutionPath(newer.id), { upgrade: installation.id })} aria-label={`Upgrade ${installation.template} to ${newer.version}`}>
                      Upgrade to {newer.version}
                    </a>
                  )}
                  <ConfirmButton
                    label="Uninstall"
                    name={`Uninstall ${installation.template}`}
                    busyLabel="Uninstalling…"
                    question={`Uninstall ${installation.template} ${installation.version}? Items it created and nobody edited are removed.`}
                    onConfirm={async () => onUninstalled(await call(api.DELETE('/solutions/installations/{id}', { params: { path: { id: installation.id } } })), installation)}
                  />
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
