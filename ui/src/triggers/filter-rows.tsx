import { useId } from 'react';
import { rowKey, type FilterRow } from './trigger-draft';
import { FILTER_TYPES, type FilterType } from './trigger-types';

/** The trigger's filters as type / field / value rows; all must hold for it to run. */
export function FilterRows({ rows, onChange }: { readonly rows: readonly FilterRow[]; readonly onChange: (rows: readonly FilterRow[]) => void }) {
  const id = useId();
  const change = (key: number, patch: Partial<FilterRow>) => onChange(rows.map((row) => (row.key === key ? { ...row, ...patch } : row)));
  return (
    <fieldset className="trg-trigger-fieldset">
      <legend>Filters</legend>
      {rows.length === 0 ? <p className="muted">No filters: it runs on every event of its types.</p> : null}
      {rows.map((row, index) => {
        const spec = FILTER_TYPES.find((entry) => entry.type === row.type) ?? FILTER_TYPES[0];
        const prefix = `${id}-${row.key}`;
        return (
          <div key={row.key} className="trg-row-editor" role="group" aria-label={`Filter ${index + 1}`}>
            <div className="field">
              <label htmlFor={`${prefix}-type`}>Type</label>
              <select id={`${prefix}-type`} value={row.type} onChange={(event) => change(row.key, { type: event.target.value as FilterType })} aria-describedby={`${prefix}-hint`}>
                {FILTER_TYPES.map((entry) => (
                  <option key={entry.type} value={entry.type}>
                    {entry.type}
                  </option>
                ))}
              </select>
            </div>
            {spec.field ? (
              <div className="field">
                <label htmlFor={`${prefix}-field`}>Field</label>
                <input id={`${prefix}-field`} className="mono" value={row.field} onChange={(event) => change(row.key, { field: event.target.value })} placeholder="data.temperature" spellCheck={false} />
              </div>
            ) : null}
            <div className="field trg-field-grow">
              <label htmlFor={`${prefix}-value`}>{spec.value.charAt(0).toUpperCase() + spec.value.slice(1)}</label>
              <input id={`${prefix}-value`} className="mono" value={row.value} onChange={(event) => change(row.key, { value: event.target.value })} spellCheck={false} />
            </div>
            <button type="button" className="button button-quiet trg-row-remove" onClick={() => onChange(rows.filter((item) => item.key !== row.key))} aria-label={`Remove filter ${index + 1}`}>
              Remove
            </button>
            <p id={`${prefix}-hint`} className="muted field-hint trg-row-hint">
              {spec.hint}
            </p>
          </div>
        );
      })}
      <button type="button" className="button button-quiet" onClick={() => onChange([...rows, { key: rowKey(), type: '==', field: '', value: '' }])}>
        Add filter
      </button>
    </fieldset>
  );
}
