import { useId, useState, type FormEvent } from 'react';
import type { KnownValue, Lwm2mOperation, OperationBody, ResourceDefinition } from './lwm2m-types';
import { typedValue, ValueInput } from './value-input';

/** What the last operation on a path gave: under way, its outcome in words, or the API's message. */
export type OperationState = { readonly busy: true } | { readonly busy: false; readonly ok: string } | { readonly busy: false; readonly error: string };

export interface OperationProps {
  /** Runs an operation; its outcome lands in `results` under `path`. */
  readonly operate: (operation: Lwm2mOperation, body: OperationBody) => void;
  readonly results: ReadonlyMap<string, OperationState>;
  /** Observed paths and their observation tokens. */
  readonly observed: ReadonlyMap<string, string>;
}

function showValue(known: KnownValue | undefined): string {
  if (known === undefined) return '—';
  return typeof known.value === 'string' ? known.value : JSON.stringify(known.value);
}

/** The outcome of the last operation on `path`, inline: progress, the outcome, or the API's message. */
export function OperationOutcome({ state }: { readonly state: OperationState | undefined }) {
  if (state === undefined) return null;
  if (state.busy) {
    return (
      <span className="op-result op-busy" role="status">
        Waiting for the device…
      </span>
    );
  }
  if ('error' in state) {
    return (
      <span className="op-result op-error" role="alert">
        {state.error}
      </span>
    );
  }
  return (
    <span className="op-result op-ok" role="status">
      {state.ok}
    </span>
  );
}

/**
 * One resource of an instance: name, path, the value known (each instance of a multiple one), and the actions
 * its definition allows: read and observe (R), write with a field of its type (W), execute with arguments (E).
 */
export function ResourceRow({ path, resource, values, operations }: { readonly path: string; readonly resource: ResourceDefinition; readonly values: readonly [string, KnownValue][]; readonly operations: OperationProps }) {
  const id = useId();
  const [editing, setEditing] = useState<'write' | 'exec' | undefined>(undefined);
  const [text, setText] = useState('');
  const { operate, results, observed } = operations;
  const readable = resource.operations.includes('R');
  const writable = resource.operations.includes('W');
  const executable = resource.operations === 'E';
  const state = results.get(path);
  const busy = state?.busy === true;
  const observation = observed.get(path);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (editing === 'write') {
      const value = typedValue(resource.type, text);
      operate('write', { path, value });
    } else if (editing === 'exec') {
      operate('exec', text.trim() === '' ? { path } : { path, args: text.trim() });
    }
    setEditing(undefined);
  };

  return (
    <tr data-path={path}>
      <th scope="row">
        <span className="resource-name">{resource.name}</span>
        <span className="mono muted resource-path">
          {path}
          {resource.units ? ` · ${resource.units}` : ''}
        </span>
      </th>
      <td className="resource-value">
        {resource.multiple && values.length > 0 ? (
          <ul className="value-list">
            {values.map(([valuePath, known]) => (
              <li key={valuePath}>
                <span className="muted mono">{valuePath.slice(path.length + 1)}:</span> <span className="mono">{showValue(known)}</span>
              </li>
            ))}
          </ul>
        ) : (
          <span className="mono" data-testid="value" title={values[0] === undefined ? undefined : `${values[0][1].source}${values[0][1].time ? ` at ${values[0][1].time}` : ''}`}>
            {showValue(values[0]?.[1])}
          </span>
        )}
        {observation === undefined ? null : <span className="observing-badge">observed</span>}
        <OperationOutcome state={state} />
      </td>
      <td className="resource-actions">
        <div className="action-buttons">
          {readable ? (
            <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('read', { path })} aria-label={`Read ${resource.name}`}>
              Read
            </button>
          ) : null}
          {readable ? (
            observation === undefined ? (
              <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('observe', { path })} aria-label={`Observe ${resource.name}`}>
                Observe
              </button>
            ) : (
              <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('cancelObserve', { path })} aria-label={`Cancel observing ${resource.name}`}>
                Cancel observe
              </button>
            )
          ) : null}
          {writable && !resource.multiple ? (
            <button type="button" className="button button-quiet button-small" disabled={busy} aria-expanded={editing === 'write'} onClick={() => setEditing(editing === 'write' ? undefined : 'write')} aria-label={`Write ${resource.name}`}>
              Write…
            </button>
          ) : null}
          {executable ? (
            <button type="button" className="button button-quiet button-small" disabled={busy} aria-expanded={editing === 'exec'} onClick={() => setEditing(editing === 'exec' ? undefined : 'exec')} aria-label={`Execute ${resource.name}`}>
              Execute…
            </button>
          ) : null}
        </div>
        {editing === undefined ? null : (
          <form className="action-form" onSubmit={submit}>
            <label htmlFor={`${id}-input`}>{editing === 'write' ? `New value (${resource.type})` : 'Arguments (optional)'}</label>
            {editing === 'write' ? (
              <ValueInput id={`${id}-input`} type={resource.type} value={text} onChange={setText} />
            ) : (
              <input id={`${id}-input`} value={text} onChange={(event) => setText(event.target.value)} placeholder="0='v',1" spellCheck={false} />
            )}
            <button type="submit" className="button button-small">
              {editing === 'write' ? 'Write' : 'Execute'}
            </button>
          </form>
        )}
      </td>
    </tr>
  );
}
