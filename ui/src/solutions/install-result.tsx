import type { InstallResult, UninstallResult } from './solutions-api';

/** A refused, kept or removed item. */
interface Note {
  readonly section: string;
  readonly item: string;
  readonly reason?: string | undefined;
}

const OUTCOMES: Readonly<Record<InstallResult['outcome'], string>> = {
  done: 'Done: every item was applied.',
  partial: 'Partly done: some items were refused.',
  failed: 'Failed: nothing was applied.',
};

function NoteTable({ label, notes }: { readonly label: string; readonly notes: readonly Note[] }) {
  if (notes.length === 0) return null;
  return (
    <div className="table-scroll">
      <table className="table table-compact" aria-label={label}>
        <caption className="sol-caption">{label}</caption>
        <thead>
          <tr>
            <th scope="col">Section</th>
            <th scope="col">Item</th>
            <th scope="col">Why</th>
          </tr>
        </thead>
        <tbody>
          {notes.map((note) => (
            <tr key={`${note.section}/${note.item}`}>
              <td>{note.section}</td>
              <td className="mono">{note.item}</td>
              <td>{note.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What an install or upgrade did: its outcome, counts, the refused items, the kept (user-edited) and removed ones. */
export function InstallResultView({ result }: { readonly result: InstallResult }) {
  const { counts } = result;
  const verb = result.action === 'upgrade' ? `Upgraded ${result.template} from ${result.previousVersion ?? '?'} to ${result.version}` : `Installed ${result.template} ${result.version}`;
  return (
    <div className="card sol-result" role="status" aria-label="Install result">
      <h2>{verb}</h2>
      <p data-testid="sol-outcome">{OUTCOMES[result.outcome]}</p>
      <ul className="stats sol-counts" aria-label="Counts">
        <li>{counts.created} created</li>
        <li>{counts.updated} updated</li>
        <li>{counts.unchanged} unchanged</li>
        <li>{counts.refusedCount} refused</li>
      </ul>
      <NoteTable label="Refused items" notes={result.refused} />
      <NoteTable label="Kept: edited since the previous version" notes={result.kept} />
      <NoteTable label="Removed: no longer in the template" notes={result.removed} />
      {result.onceEvents.length === 0 ? null : <p className="muted">Sent their once-event: {result.onceEvents.join(', ')}.</p>}
    </div>
  );
}

/** What an uninstall removed, and what it kept and why. */
export function UninstallResultView({ result, template }: { readonly result: UninstallResult; readonly template: string }) {
  return (
    <div className="card sol-result" role="status" aria-label="Uninstall result">
      <h2>Uninstalled {template}</h2>
      <p data-testid="sol-outcome">
        {result.outcome === 'done' ? `Done: ${result.removed.length} items removed.` : `Partly done: ${result.removed.length} items removed, ${result.kept.length} kept.`}
      </p>
      <NoteTable label="Kept items" notes={result.kept} />
    </div>
  );
}
