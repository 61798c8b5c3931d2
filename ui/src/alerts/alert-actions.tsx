import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import type { Alert, AlertPatch } from './alert-types';

type Target = AlertPatch['state'];

const VERB: Record<Target, { readonly label: string; readonly busy: string }> = {
  acknowledged: { label: 'Acknowledge', busy: 'Acknowledging…' },
  closed: { label: 'Close', busy: 'Closing…' },
};

/** "fridge too warm on fridge-1": how an alert is named in buttons and notices. */
export function alertLabel(alert: Pick<Alert, 'name' | 'endpointKey'>): string {
  return alert.endpointKey === null ? alert.name : `${alert.name} on ${alert.endpointKey}`;
}

export interface AlertActionsProps {
  readonly alert: Alert;
  /** The alert as `PATCH /alerts/{id}` answered. */
  readonly onChanged: (alert: Alert) => void;
}

/**
 * Acknowledge (an open alert) and Close (one not closed yet), each asking first for an optional note that the
 * alert's history keeps: `PATCH /alerts/{id}`. The API's message shows when it refuses (the alert moved on meanwhile).
 */
export function AlertActions({ alert, onChanged }: AlertActionsProps) {
  const id = useId();
  const { api } = useSession();
  const action = useAction();
  const [target, setTarget] = useState<Target | undefined>(undefined);
  const [note, setNote] = useState('');
  const label = alertLabel(alert);

  if (alert.state === 'closed') return <span className="muted">—</span>;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (target === undefined) return;
    const body: AlertPatch = { state: target, ...(note.trim() !== '' && { note: note.trim() }) };
    const changed = await action.run(() => call(api.PATCH('/alerts/{id}', { params: { path: { id: alert.id } }, body })));
    if (changed === undefined) return;
    setTarget(undefined);
    setNote('');
    onChanged(changed);
  };

  if (target === undefined) {
    const targets: Target[] = alert.state === 'open' ? ['acknowledged', 'closed'] : ['closed'];
    return (
      <span className="alt-actions">
        {targets.map((state) => (
          <button key={state} type="button" className="button button-quiet" aria-label={`${VERB[state].label} ${label}`} onClick={() => setTarget(state)}>
            {VERB[state].label}
          </button>
        ))}
      </span>
    );
  }

  const verb = VERB[target];
  return (
    <form
      className="alt-action-form"
      aria-label={`${verb.label} ${label}`}
      onSubmit={(event) => void submit(event)}
      onKeyDown={(event) => {
        if (event.key === 'Escape') setTarget(undefined);
      }}
    >
      <label htmlFor={`${id}-note`}>Note (optional)</label>
      {/* The user asked for this step, so focus goes to its first field. */}
      <input id={`${id}-note`} value={note} maxLength={1000} autoFocus onChange={(event) => setNote(event.target.value)} />
      <span className="alt-action-buttons">
        <button type="submit" className="button" disabled={action.busy}>
          {action.busy ? verb.busy : verb.label}
        </button>
        <button type="button" className="button button-quiet" disabled={action.busy} onClick={() => setTarget(undefined)}>
          Cancel
        </button>
      </span>
      <ErrorMessage message={action.error} />
    </form>
  );
}
