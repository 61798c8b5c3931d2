import type { InputHTMLAttributes, ReactNode } from 'react';

export interface InputFieldProps extends InputHTMLAttributes<HTMLInputElement> {
  /** The input's id: its label points to it, and `<id>-hint` names the hint. */
  readonly id: string;
  readonly label: ReactNode;
  /** A line under the input (`.field-hint`), read out with it (aria-describedby). */
  readonly hint?: ReactNode;
}

/**
 * A labelled input of a `.form`: label, input and optional hint, side by side in the form's column (no
 * wrapper, so the form lays them out as before). Every other prop goes to the input.
 */
export function InputField({ id, label, hint, ...input }: InputFieldProps) {
  const hintId = `${id}-hint`;
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-describedby={hint === undefined ? undefined : hintId} {...input} />
      {hint === undefined ? null : (
        <p id={hintId} className="muted field-hint">
          {hint}
        </p>
      )}
    </>
  );
}
