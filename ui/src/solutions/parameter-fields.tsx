import { useId } from 'react';
import { choicesOf, scalarText, type ParameterTexts } from './parameter-values';
import type { Parameter } from './solutions-api';

export interface ParameterFieldsProps {
  readonly parameters: Readonly<Record<string, Parameter>>;
  readonly texts: ParameterTexts;
  readonly onChange: (texts: ParameterTexts) => void;
}

function hintOf(name: string, parameter: Parameter): string {
  const parts = [parameter.description, `${parameter.type} {{${name}}}`];
  if (parameter.default !== undefined) parts.push(`default ${JSON.stringify(parameter.default)}`);
  return parts.filter((part) => part !== undefined && part !== '').join(' · ');
}

/**
 * One field per parameter of the template's schema: a choice for an enum or a boolean, a number field for
 * number and integer, text otherwise; labelled by its title, required ones marked.
 */
export function ParameterFields({ parameters, texts, onChange }: ParameterFieldsProps) {
  const id = useId();
  const names = Object.keys(parameters);
  if (names.length === 0) return <p className="muted">This template has no parameters.</p>;
  return (
    <fieldset className="sol-parameters">
      <legend>Parameters</legend>
      {names.map((name) => {
        const parameter = parameters[name]!;
        const fieldId = `${id}-${name}`;
        const value = texts[name] ?? '';
        const set = (text: string) => onChange({ ...texts, [name]: text });
        const choices = choicesOf(parameter);
        const common = { id: fieldId, value, 'aria-describedby': `${fieldId}-hint`, 'aria-required': parameter.required === true };
        return (
          <div className="sol-parameter" key={name}>
            <label htmlFor={fieldId}>
              {parameter.title ?? name}
              {parameter.required === true ? <span className="sol-required"> (required)</span> : null}
            </label>
            {choices === undefined ? (
              <input
                {...common}
                type={parameter.type === 'string' ? 'text' : 'number'}
                step={parameter.type === 'integer' ? 1 : parameter.type === 'number' ? 'any' : undefined}
                onChange={(event) => set(event.target.value)}
              />
            ) : (
              <select {...common} onChange={(event) => set(event.target.value)}>
                <option value="">{parameter.default === undefined ? 'not set' : `default (${scalarText(parameter.default)})`}</option>
                {choices.map((choice) => (
                  <option key={String(choice)} value={String(choice)}>
                    {String(choice)}
                  </option>
                ))}
              </select>
            )}
            <p id={`${fieldId}-hint`} className="muted field-hint">
              {hintOf(name, parameter)}
            </p>
          </div>
        );
      })}
    </fieldset>
  );
}
