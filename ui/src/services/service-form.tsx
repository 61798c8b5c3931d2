import { useCallback, useId, useState, type FormEvent } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { loadTypeOptions, type TypeOptions } from './option-schema';
import { optionsOf, textsOf, type OptionTexts } from './option-values';
import { OptionFields } from './option-fields';
import { SERVICE_TYPES, type ServiceType } from './service-types';
import type { Service } from './use-services';

export interface ServiceFormProps {
  readonly api: ApiClient;
  /** The service to edit (PUT /services/{id}); without it the form creates one (POST /services). */
  readonly service?: Service;
  readonly onSaved: (service: Service) => void;
}

/**
 * Creates or edits a service: name, type, and the type's options as fields generated from the schema the API
 * publishes per type (GET /services/types), with a JSON field for the options no field shows (lists, nested ones).
 */
export function ServiceForm(props: ServiceFormProps) {
  const { api } = props;
  const schema = useResource(useCallback(() => loadTypeOptions(api), [api]));
  if (schema.data === undefined && schema.error === undefined) {
    return (
      <div className="card">
        <Loading what="the service options" />
      </div>
    );
  }
  // Without the types' schemas the form still works: every option goes through the JSON field.
  return <ServiceFormFields {...props} types={schema.data ?? new Map()} schemaError={schema.error} />;
}

interface FieldsProps extends ServiceFormProps {
  readonly types: ReadonlyMap<ServiceType, TypeOptions>;
  readonly schemaError: string | undefined;
}

const NO_OPTIONS: TypeOptions = { description: '', fields: [], jsonOnly: [] };

const EMPTY: OptionTexts = { fields: {}, json: '' };

function ServiceFormFields({ api, service, onSaved, types, schemaError }: FieldsProps) {
  const id = useId();
  const [name, setName] = useState(service?.name ?? '');
  const [type, setType] = useState<ServiceType>(service?.type ?? 'lwm2m');
  const { fields, jsonOnly } = types.get(type) ?? NO_OPTIONS;
  const [texts, setTexts] = useState<OptionTexts>(() => (service === undefined ? EMPTY : textsOf(service.options, (types.get(service.type) ?? NO_OPTIONS).fields)));
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const parsed = optionsOf(texts, fields);
    if ('problem' in parsed) {
      setError(parsed.problem);
      return;
    }
    const { options } = parsed;
    setBusy(true);
    setError(undefined);
    try {
      let saved: Service;
      if (service === undefined) {
        saved = await call(api.POST('/services', { body: { name, type, ...(Object.keys(options).length === 0 ? {} : { options }) } }));
        setName('');
        setTexts(EMPTY);
      } else {
        // PUT replaces: an option left out returns to its default.
        saved = await call(api.PUT('/services/{id}', { params: { path: { id: service.id } }, body: { name, type, options } }));
      }
      onSaved(saved);
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };

  const hint = types.get(type)?.description ?? SERVICE_TYPES.find((entry) => entry.type === type)?.hint;
  const jsonNames = jsonOnly.length === 0 ? '' : ` (${jsonOnly.join(', ')} among them)`;
  return (
    <form className="card form service-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{service === undefined ? 'New service' : 'Edit service'}</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      <input id={`${id}-name`} name="name" required maxLength={200} value={name} onChange={(event) => setName(event.target.value)} />
      <label htmlFor={`${id}-type`}>Type</label>
      <select id={`${id}-type`} name="type" value={type} onChange={(event) => setType(event.target.value as ServiceType)} aria-describedby={`${id}-type-hint`}>
        {SERVICE_TYPES.map((entry) => (
          <option key={entry.type} value={entry.type}>
            {entry.label}
          </option>
        ))}
      </select>
      <p id={`${id}-type-hint`} className="muted field-hint">
        {hint}
        {service === undefined ? null : '; the type changes only while the service has no endpoints'}
      </p>
      {fields.length === 0 ? null : <OptionFields fields={fields} type={type} texts={texts.fields} onChange={(fieldTexts) => setTexts({ ...texts, fields: fieldTexts })} />}
      <ErrorMessage message={schemaError === undefined ? undefined : `${schemaError}; give the options as JSON`} />
      <label htmlFor={`${id}-options`}>Options (JSON, optional)</label>
      <textarea
        id={`${id}-options`}
        name="options"
        rows={service === undefined ? 3 : 5}
        spellCheck={false}
        className="mono"
        placeholder={jsonOnly.length === 0 ? '{}' : `{"${jsonOnly[0]}": …}`}
        aria-describedby={`${id}-options-hint`}
        value={texts.json}
        onChange={(event) => setTexts({ ...texts, json: event.target.value })}
      />
      <p id={`${id}-options-hint`} className="muted field-hint">
        Advanced: options the fields do not show{jsonNames}, as a JSON object. They win over the fields.
      </p>
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {service === undefined ? (busy ? 'Creating…' : 'Create service') : busy ? 'Saving…' : 'Save service'}
      </button>
    </form>
  );
}
