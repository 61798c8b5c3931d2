// Between a service's options (JSON) and the text of the options form: the generated fields and the JSON field.
import { messageOf } from '../api/client';
import type { OptionField } from './option-schema';
import type { ServiceOptions } from './service-types';

/** The text of each option field by option name ('' leaves the option out: the API's default). */
export type FieldTexts = Readonly<Record<string, string>>;

export interface OptionTexts {
  readonly fields: FieldTexts;
  /** The options no field shows, as a JSON object ('' when there are none). */
  readonly json: string;
}

function fits(field: OptionField, value: unknown): boolean {
  switch (field.kind) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
    case 'number':
      return typeof value === 'number';
    case 'choice':
      return (typeof value === 'string' || typeof value === 'number') && field.choices.includes(value);
    case 'text':
      return typeof value === 'string';
  }
}

/** Splits a service's options into the fields of its type and the JSON of the rest. */
export function textsOf(options: ServiceOptions, fields: readonly OptionField[]): OptionTexts {
  const texts: Record<string, string> = {};
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    const field = fields.find((candidate) => candidate.name === name);
    if (field !== undefined && fits(field, value)) texts[name] = String(value);
    else rest[name] = value;
  }
  return { fields: texts, json: Object.keys(rest).length === 0 ? '' : JSON.stringify(rest, null, 2) };
}

/** The JSON field as an object, or why it is not one; the API checks the options themselves. */
export function parseJsonOptions(text: string): { options: Record<string, unknown> } | { problem: string } {
  if (text.trim() === '') return { options: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { problem: `Options are not JSON: ${messageOf(error)}` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { problem: 'Options must be a JSON object, e.g. {"allowNoSec": false}' };
  return { options: parsed as Record<string, unknown> };
}

/**
 * The options the form describes: the filled fields of the chosen type, then the JSON field over them; or why
 * the text cannot be options.
 */
export function optionsOf(texts: OptionTexts, fields: readonly OptionField[]): { options: ServiceOptions } | { problem: string } {
  const options: Record<string, unknown> = {};
  for (const field of fields) {
    const text = (texts.fields[field.name] ?? '').trim();
    if (text === '') continue;
    if (field.kind === 'boolean') options[field.name] = text === 'true';
    else if (field.kind === 'integer' || field.kind === 'number') {
      const value = Number(text);
      if (!Number.isFinite(value)) return { problem: `${field.name} must be a number` };
      options[field.name] = value;
    } else if (field.kind === 'choice') options[field.name] = field.choices.find((choice) => String(choice) === text) ?? text;
    else options[field.name] = text;
  }
  const json = parseJsonOptions(texts.json);
  if ('problem' in json) return json;
  return { options: { ...options, ...json.options } };
}
