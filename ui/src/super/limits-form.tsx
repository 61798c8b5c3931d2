import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { InputField } from '../components/input-field';
import { useSession } from '../session/session';
import type { AccountStatus, Limits } from './account-status';

const FIELDS: readonly { readonly name: keyof Limits; readonly label: string; readonly hint: string }[] = [
  { name: 'maxEndpoints', label: 'Max endpoints', hint: 'Creating one more answers 409.' },
  { name: 'eventsPerSecond', label: 'Events per second', hint: 'From its devices and POST /events; over it, device messages are dropped.' },
  { name: 'scriptCpuMsPerMinute', label: 'Script ms per minute', hint: 'Once used, its triggers are skipped until the next minute.' },
];

type Texts = Readonly<Record<keyof Limits, string>>;

const textsOf = (limits: Limits): Texts => ({
  maxEndpoints: limits.maxEndpoints === null ? '' : String(limits.maxEndpoints),
  eventsPerSecond: limits.eventsPerSecond === null ? '' : String(limits.eventsPerSecond),
  scriptCpuMsPerMinute: limits.scriptCpuMsPerMinute === null ? '' : String(limits.scriptCpuMsPerMinute),
});

/** An account's limits (`PUT /super/accounts/{id}/limits`): a number each, empty for no limit, 0 allows none. */
export function LimitsForm({ status, onDone }: { readonly status: AccountStatus; readonly onDone: (status: AccountStatus) => void }) {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [texts, setTexts] = useState<Texts>(() => textsOf(status.limits));
  const [saved, setSaved] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    setSaved(false);
    const body: Record<string, number | null> = {};
    for (const field of FIELDS) {
      const text = texts[field.name].trim();
      const value = Number(text);
      if (text !== '' && (!Number.isInteger(value) || value < 0)) {
        setError(`${field.label} must be a whole number, 0 or more, or empty for no limit.`);
        return;
      }
      body[field.name] = text === '' ? null : value;
    }
    const next = await run(() => call(api.PUT('/super/accounts/{id}/limits', { params: { path: { id: status.accountId } }, body })));
    if (next === undefined) return;
    setSaved(true);
    onDone(next);
  };

  const { usage } = status;
  return (
    <form className="form super-action-form" aria-label={`Limits of ${status.name}`} onSubmit={(event) => void submit(event)}>
      <div className="super-limits">
        {FIELDS.map((field) => (
          <div key={field.name} className="super-limit">
            <InputField
              id={`${id}-${field.name}`}
              label={field.label}
              hint={field.hint}
              type="number"
              min={0}
              step={1}
              inputMode="numeric"
              placeholder="no limit"
              value={texts[field.name]}
              onChange={(event) => setTexts({ ...texts, [field.name]: event.target.value })}
            />
          </div>
        ))}
      </div>
      <p className="muted field-hint">
        Refused since this node started: {usage.droppedDeviceMessages} device messages, {usage.refusedApiEvents} API events, {usage.skippedScriptRuns} script runs;{' '}
        {usage.scriptCpuMsThisMinute} ms of script time this minute.
      </p>
      <ErrorMessage message={error} />
      {saved ? (
        <p className="notice" role="status">
          The limits were saved.
        </p>
      ) : null}
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Saving…' : 'Save limits'}
      </button>
    </form>
  );
}
