import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { useSession } from '../session/session';
import { KEY_REQUIRED, SERVICE_TYPE_LABELS, SERVICE_TYPES, type LocationService, type LocationServiceType, type LocationServiceWrite } from './location-types';

/**
 * `POST /location/services`: a name and a type; an HTTP provider also has a URL (empty: its public API) and an
 * API key. The key is a password field, cleared once the service is created: the API never gives it back.
 */
export function LocationServiceForm({ onCreated }: { readonly onCreated: (service: LocationService) => void }) {
  const id = useId();
  const { api } = useSession();
  const action = useAction();
  const [type, setType] = useState<LocationServiceType>('embedded');

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const url = formText(form, 'url').trim();
    const apiKey = formText(form, 'apiKey');
    const body: LocationServiceWrite = {
      name: formText(form, 'name').trim(),
      type,
      ...(type !== 'embedded' && url !== '' ? { url } : {}),
      ...(type !== 'embedded' && apiKey !== '' ? { apiKey } : {}),
    };
    const created = await action.run(() => call(api.POST('/location/services', { body })));
    if (created === undefined) return;
    element.reset();
    setType('embedded');
    onCreated(created);
  };

  const http = type !== 'embedded';
  return (
    <form className="card form loc-service-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New location service</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} name="name" required maxLength={200} />
      <label htmlFor={`${id}-type`}>Type</label>
      <select id={`${id}-type`} name="type" value={type} onChange={(event) => setType(event.target.value as LocationServiceType)}>
        {SERVICE_TYPES.map((choice) => (
          <option key={choice} value={choice}>
            {SERVICE_TYPE_LABELS[choice]}
          </option>
        ))}
      </select>
      {http ? (
        <>
          <label htmlFor={`${id}-url`}>URL (optional)</label>
          <input id={`${id}-url`} name="url" type="url" maxLength={2000} spellCheck={false} placeholder="https://…" aria-describedby={`${id}-url-hint`} />
          <p id={`${id}-url-hint`} className="muted field-hint">
            Empty: the provider’s public API.
          </p>
          <label htmlFor={`${id}-key`}>{KEY_REQUIRED.has(type) ? 'API key' : 'API key (optional)'}</label>
          <input
            id={`${id}-key`}
            name="apiKey"
            type="password"
            autoComplete="new-password"
            required={KEY_REQUIRED.has(type)}
            maxLength={500}
            spellCheck={false}
            aria-describedby={`${id}-key-hint`}
          />
          <p id={`${id}-key-hint`} className="muted field-hint">
            Stored for the account and never shown again.
          </p>
        </>
      ) : (
        <p className="muted field-hint">Positions come from the CSV files imported into it (below the list, once created).</p>
      )}
      <ErrorMessage message={action.error} />
      <button type="submit" className="button" disabled={action.busy}>
        {action.busy ? 'Creating…' : 'Create service'}
      </button>
    </form>
  );
}
