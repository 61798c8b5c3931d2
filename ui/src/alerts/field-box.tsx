import type { ReactNode } from 'react';
import type { RuleField } from './rule-errors';

/** The input id of a rule form field: `<form id>-condition-minutes`. */
export function fieldId(base: string, field: RuleField): string {
  return `${base}-${field.replace(/\./g, '-')}`;
}

/** What the control of a {@link FieldBox} spreads onto its input or select. */
export interface ControlProps {
  readonly id: string;
  readonly 'aria-describedby': string | undefined;
  readonly 'aria-invalid': true | undefined;
}

export interface FieldBoxProps {
  /** The form's id (useId). */
  readonly base: string;
  readonly field: RuleField;
  readonly label: ReactNode;
  readonly hint?: ReactNode;
  /** The API's message when it refused the rule for this field. */
  readonly error: string | undefined;
  readonly children: (control: ControlProps) => ReactNode;
}

/**
 * A labelled control of the rule form with its hint and, when the API refused the rule over this field, the API's
 * message under it: the control is marked invalid and described by the message.
 */
export function FieldBox({ base, field, label, hint, error, children }: FieldBoxProps) {
  const id = fieldId(base, field);
  const describedBy = [hint === undefined ? undefined : `${id}-hint`, error === undefined ? undefined : `${id}-error`].filter((part) => part !== undefined).join(' ');
  return (
    <>
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-describedby': describedBy === '' ? undefined : describedBy, 'aria-invalid': error === undefined ? undefined : true })}
      {hint === undefined ? null : (
        <p id={`${id}-hint`} className="muted field-hint">
          {hint}
        </p>
      )}
      {error === undefined ? null : (
        <p id={`${id}-error`} className="error-message alt-field-error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}
