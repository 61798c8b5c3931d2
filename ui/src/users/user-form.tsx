import { useId, type FormEvent } from 'react';
import { call, type ApiClient } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { InputField } from '../components/input-field';
import type { AccountUser } from './user-table';

/** Creates a user of the acting account (POST /users); Super-Admin only offered to a Super-Admin. */
export function NewUserForm({ api, superAdmin, onCreated }: { readonly api: ApiClient; readonly superAdmin: boolean; readonly onCreated: (user: AccountUser) => void }) {
  const id = useId();
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const name = formText(form, 'name').trim();
    const created = await run(() =>
      call(
        api.POST('/users', {
          body: { email: formText(form, 'email').trim(), password: formText(form, 'password'), ...(name === '' ? {} : { name }), ...(form.get('superAdmin') === 'on' ? { superAdmin: true } : {}) },
        }),
      ),
    );
    if (created === undefined) return;
    formElement.reset();
    onCreated(created);
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New user</h2>
      <InputField id={`${id}-email`} label="Email" name="email" type="email" required autoComplete="off" />
      <InputField id={`${id}-password`} label="Password" hint="At least 8 characters." name="password" type="password" required autoComplete="new-password" />
      <InputField id={`${id}-name`} label="Display name (optional)" name="name" maxLength={200} />
      {superAdmin ? (
        <label className="admin-checkbox">
          <input name="superAdmin" type="checkbox" />
          Super-Admin (root account only)
        </label>
      ) : null}
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Creating…' : 'Create user'}
      </button>
    </form>
  );
}

/** Changes a user's name or password (PUT /users/{id}); an empty password keeps the current one. */
export function EditUserForm({ api, user, onSaved, onCancel }: { readonly api: ApiClient; readonly user: AccountUser; readonly onSaved: (user: AccountUser) => void; readonly onCancel: () => void }) {
  const id = useId();
  const { busy, error, run } = useAction();

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const name = formText(form, 'name').trim();
    const password = formText(form, 'password');
    const saved = await run(() =>
      call(api.PUT('/users/{id}', { params: { path: { id: user.id } }, body: { ...(name === '' || name === user.name ? {} : { name }), ...(password === '' ? {} : { password }) } })),
    );
    if (saved !== undefined) onSaved(saved);
  };

  return (
    <form className="card form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Edit {user.email}</h2>
      <InputField id={`${id}-name`} label="Display name" name="name" maxLength={200} defaultValue={user.name} autoFocus />
      <InputField id={`${id}-password`} label="New password (optional)" hint="Empty keeps the current password." name="password" type="password" autoComplete="new-password" />
      <ErrorMessage message={error} />
      <span className="admin-form-buttons">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Saving…' : 'Save user'}
        </button>
        <button type="button" className="button button-quiet" onClick={onCancel}>
          Cancel
        </button>
      </span>
    </form>
  );
}
