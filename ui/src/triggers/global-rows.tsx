import { useId } from 'react';
import { rowKey, type GlobalRow } from './trigger-draft';

/** Global variables: name, JSON value, and whether an import leaves the current value alone. */
export function GlobalRows({ rows, onChange }: { readonly rows: readonly GlobalRow[]; readonly onChange: (rows: readonly GlobalRow[]) => void }) {
  const id = useId();
  const change = (key: number, patch: Partial<GlobalRow>) => onChange(rows.map((row) => (row.key === key ? { ...row, ...patch } : row)));
  return (
    <fieldset className="trg-trigger-fieldset">
      <legend>Global variables</legend>
      <p className="muted field-hint">The script sees each as a variable of that name. A protected one keeps its value when the trigger is imported again.</p>
      {rows.map((row, index) => {
        const prefix = `${id}-${row.key}`;
        return (
          <div key={row.key} className="trg-row-editor" role="group" aria-label={`Global variable ${index + 1}`}>
            <div className="field">
              <label htmlFor={`${prefix}-name`}>Name</label>
              <input id={`${prefix}-name`} className="mono" value={row.name} onChange={(event) => change(row.key, { name: event.target.value })} spellCheck={false} />
            </div>
            <div className="field trg-field-grow">
              <label htmlFor={`${prefix}-value`}>Value (JSON)</label>
              <input id={`${prefix}-value`} className="mono" value={row.value} onChange={(event) => change(row.key, { value: event.target.value })} spellCheck={false} />
            </div>
            <label className="trg-check">
              <input type="checkbox" checked={row.protected} onChange={(event) => change(row.key, { protected: event.target.checked })} />
              Protected
            </label>
            <button type="button" className="button button-quiet trg-row-remove" onClick={() => onChange(rows.filter((item) => item.key !== row.key))} aria-label={`Remove global variable ${index + 1}`}>
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" className="button button-quiet" onClick={() => onChange([...rows, { key: rowKey(), name: '', value: '', protected: false }])}>
        Add variable
      </button>
    </fieldset>
  );
}
