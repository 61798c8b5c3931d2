import { useId } from 'react';
import { serviceTypeLabel, type ServiceType } from './service-types';
import type { OptionField } from './option-schema';
import type { FieldTexts } from './option-values';

export interface OptionFieldsProps {
  readonly fields: readonly OptionField[];
  readonly type: ServiceType;
  readonly texts: FieldTexts;
  readonly onChange: (texts: FieldTexts) => void;
}

/** One field per option of the type's schema (GET /services/types); empty leaves the option at its default. */
export function OptionFields({ fields, type, texts, onChange }: OptionFieldsProps) {
  const id = useId();
  const set = (name: string, text: string) => onChange({ ...texts, [name]: text });
  return (
    <fieldset className="option-fields">
      <legend>Options of a {serviceTypeLabel(type)} service</legend>
      <p className="muted field-hint">Left empty, an option keeps the API&apos;s default.</p>
      {fields.map((field) => {
        const fieldId = `${id}-${field.name}`;
        const value = texts[field.name] ?? '';
        const hint = [field.description, field.limits].filter((part) => part !== undefined && part !== '').join('. ');
        return (
          <div className="option-field" key={field.name}>
            <label htmlFor={fieldId} className="mono">
              {field.name}
            </label>
            {field.kind === 'boolean' || field.kind === 'choice' ? (
              <select id={fieldId} value={value} onChange={(event) => set(field.name, event.target.value)} aria-describedby={hint === '' ? undefined : `${fieldId}-hint`}>
                <option value="">{field.fallback === undefined ? 'default' : `default (${field.fallback})`}</option>
                {(field.kind === 'boolean' ? ['true', 'false'] : field.choices).map((choice) => (
                  <option key={choice} value={String(choice)}>
                    {choice}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={fieldId}
                type={field.kind === 'text' ? 'text' : 'number'}
                step={field.kind === 'integer' ? 1 : field.kind === 'number' ? 'any' : undefined}
                inputMode={field.kind === 'integer' ? 'numeric' : field.kind === 'number' ? 'decimal' : undefined}
                value={value}
                placeholder={field.fallback === undefined ? 'default' : `default: ${field.fallback}`}
                onChange={(event) => set(field.name, event.target.value)}
                aria-describedby={hint === '' ? undefined : `${fieldId}-hint`}
              />
            )}
            {hint === '' ? null : (
              <p id={`${fieldId}-hint`} className="muted field-hint">
                {hint}
              </p>
            )}
          </div>
        );
      })}
    </fieldset>
  );
}
