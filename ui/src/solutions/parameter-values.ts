// Between a template's parameters (their schema: type, default, enum) and the text of the install form.
import type { Parameter, ParameterValue } from './solutions-api';

/** The text of each parameter's field by name ('' leaves it out: the template's default applies). */
export type ParameterTexts = Readonly<Record<string, string>>;

/** A scalar as a field's text; anything else (which the API refuses as a value) as its JSON. */
export function scalarText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : JSON.stringify(value);
}

/** What the form starts with: `values` (an installation's, for an upgrade) where given, else each default. */
export function initialTexts(parameters: Readonly<Record<string, Parameter>>, values: Readonly<Record<string, unknown>> = {}): ParameterTexts {
  const texts: Record<string, string> = {};
  for (const [name, parameter] of Object.entries(parameters)) {
    const value = Object.hasOwn(values, name) ? values[name] : parameter.default;
    texts[name] = value === undefined || value === null ? '' : scalarText(value);
  }
  return texts;
}

/** The choices of a select: an enum's values, or true/false; undefined for a typed field. */
export function choicesOf(parameter: Parameter): readonly ParameterValue[] | undefined {
  if (parameter.enum !== undefined) return parameter.enum.filter((value): value is ParameterValue => ['string', 'number', 'boolean'].includes(typeof value));
  return parameter.type === 'boolean' ? [true, false] : undefined;
}

/**
 * The values to install with, typed as the template declares them; or what is wrong with a field. An empty field
 * is left out, so the API applies the default, or says that a required one is missing.
 */
export function valuesOf(parameters: Readonly<Record<string, Parameter>>, texts: ParameterTexts): { values: Record<string, ParameterValue> } | { problem: string } {
  const values: Record<string, ParameterValue> = {};
  for (const [name, parameter] of Object.entries(parameters)) {
    const text = texts[name] ?? '';
    if (text === '') continue;
    const choice = choicesOf(parameter)?.find((candidate) => String(candidate) === text);
    if (choice !== undefined) values[name] = choice;
    else if (parameter.type === 'number' || parameter.type === 'integer') {
      const number = Number(text);
      if (text.trim() === '' || !Number.isFinite(number)) return { problem: `${parameter.title ?? name} must be a number` };
      if (parameter.type === 'integer' && !Number.isInteger(number)) return { problem: `${parameter.title ?? name} must be a whole number` };
      values[name] = number;
    } else values[name] = text;
  }
  return { values };
}
