import { useId, useState, type FormEvent } from 'react';
import { call, type ApiClient } from '../api/client';
import { useAction } from '../api/use-action';
import type { paths } from '../api/schema';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';

type TokenWrite = paths['/tokens']['post']['requestBody']['content']['application/json'];
export type IssuedToken = paths['/tokens']['post']['responses'][201]['content']['application/json'];

/** Lifetimes offered for `expiresIn` (seconds; the API takes any from 60). */
const LIFETIMES = [
  { label: 'never', seconds: undefined },
  { label: '1 hour', seconds: 3600 },
  { label: '1 day', seconds: 86_400 },
  { label: '30 days', seconds: 30 * 86_400 },
  { label: '1 year', seconds: 365 * 86_400 },
] as const;

const KINDS = [
  { type: 'api', label: 'API token', hint: 'acts in this account and its sub-accounts (":<accountId>" after it)' },
  { type: 'app', label: 'App token', hint: 'acts only in this account; cannot manage tokens or users' },
] as const satisfies readonly { type: NonNullable<TokenWrite['type']>; label: string; hint: string }[];

/** Issues a token of the acting account (POST /tokens); the answer carries the secret, shown once. */
export function NewTokenForm({ api, superAdmin, onIssued }: { readonly api: ApiClient; readonly superAdmin: boolean; readonly onIssued: (token: IssuedToken) => void }) {
  const id = useId();
  const [kind, setKind] = useState<(typeof KINDS)[number]['type']>('api');
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const lifetime = LIFETIMES.find((entry) => entry.label === formText(form, 'expiresIn'))?.seconds;
    const body: TokenWrite = {
      name: formText(form, 'name').trim(),
      type: kind,
      ...(lifetime === undefined ? {} : { expiresIn: lifetime }),
      ...(form.get('superAdmin') === 'on' ? { superAdmin: true } : {}),
    };
    const issued = await run(() => call(api.POST('/tokens', { body })));
    if (issued === undefined) return;
    formElement.reset();
    setKind('api');
    onIssued(issued);
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New token</h2>
      <InputField id={`${id}-name`} label="Token name" name="name" required maxLength={200} placeholder="e.g. CI deploys" />
      <label htmlFor={`${id}-kind`}>Kind</label>
      <select id={`${id}-kind`} name="type" value={kind} onChange={(event) => setKind(event.target.value as typeof kind)} aria-describedby={`${id}-kind-hint`}>
        {KINDS.map((entry) => (
          <option key={entry.type} value={entry.type}>
            {entry.label}
          </option>
        ))}
      </select>
      <p id={`${id}-kind-hint`} className="muted field-hint">
        {KINDS.find((entry) => entry.type === kind)?.hint}
      </p>
      <label htmlFor={`${id}-expires`}>Expires after</label>
      <select id={`${id}-expires`} name="expiresIn" defaultValue="never">
        {LIFETIMES.map((entry) => (
          <option key={entry.label} value={entry.label}>
            {entry.label}
          </option>
        ))}
      </select>
      {superAdmin ? (
        <label className="admin-checkbox">
          <input name="superAdmin" type="checkbox" />
          Super-Admin (root account only)
        </label>
      ) : null}
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Creating…' : 'Create token'}
      </button>
    </form>
  );
}
