import { formatBytes, type Progress } from './file-api';

/** A transfer under way: a `<progress>` with what it is doing, announced to screen readers as it changes. */
export function TransferProgress({ label, progress }: { readonly label: string; readonly progress: Progress }) {
  const { loaded, total } = progress;
  const percent = total === undefined || total === 0 ? undefined : Math.min(100, Math.round((loaded / total) * 100));
  return (
    <div className="transfer" role="status">
      <progress className="transfer-bar" aria-label={label} max={100} value={percent} />
      <span className="transfer-text">
        {label}: {formatBytes(loaded)}
        {total === undefined ? '' : ` of ${formatBytes(total)}`}
        {percent === undefined ? '' : ` (${percent}%)`}
      </span>
    </div>
  );
}
