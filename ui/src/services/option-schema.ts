// The form of a service's options is generated from the JSON Schema of each type's options that the API
// publishes (GET /services/types), so an option the API adds shows up without a UI change.
import { call, type ApiClient } from '../api/client';
import type { ServiceType } from './service-types';

/** The part of a JSON Schema the options form reads (the API describes the schema; it is no API type). */
export interface JsonSchema {
  readonly type?: string;
  readonly enum?: readonly unknown[];
  readonly description?: string;
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
}

/** One option the form renders as a field; every other option goes to the JSON field. */
export interface OptionField {
  readonly name: string;
  readonly kind: 'boolean' | 'choice' | 'integer' | 'number' | 'text';
  /** The values of a `choice` (strings, or numbers such as a header's byte count). */
  readonly choices: readonly (string | number)[];
  readonly description: string;
  /** The limits the API checks, in words ("16 to 65507"), for the hint. */
  readonly limits: string | undefined;
  /** What the API uses when the option is left out, as text, when the schema says. */
  readonly fallback: string | undefined;
}

/** A type's options as the form shows them: fields, and the names only the JSON field takes. */
export interface TypeOptions {
  readonly description: string;
  readonly fields: readonly OptionField[];
  readonly jsonOnly: readonly string[];
}

function kindOf(schema: JsonSchema): OptionField['kind'] | undefined {
  if (schema.enum !== undefined) return schema.enum.every((value) => typeof value === 'string' || typeof value === 'number') ? 'choice' : undefined;
  switch (schema.type) {
    case 'boolean':
      return 'boolean';
    case 'integer':
      return 'integer';
    case 'number':
      return 'number';
    case 'string':
      return 'text';
    default:
      return undefined;
  }
}

function limitsOf(schema: JsonSchema): string | undefined {
  const { minimum, maximum, minLength, maxLength, pattern } = schema;
  const parts: string[] = [];
  if (minimum !== undefined && maximum !== undefined) parts.push(`${minimum} to ${maximum}`);
  else if (minimum !== undefined) parts.push(`at least ${minimum}`);
  else if (maximum !== undefined) parts.push(`at most ${maximum}`);
  if (maxLength !== undefined) parts.push(`${minLength ?? 0} to ${maxLength} characters`);
  if (pattern !== undefined) parts.push(`matching ${pattern}`);
  return parts.length === 0 ? undefined : parts.join(', ');
}

/** A default as the hint shows it: text as it is, unless JSON would escape it ("\\n" for a newline). */
function shown(value: unknown): string {
  const json = JSON.stringify(value);
  return typeof value === 'string' && json === `"${value}"` ? value : json;
}

/** The fields for the options of `schema` (one type's `options`). */
export function optionFields(schema: JsonSchema): { fields: readonly OptionField[]; jsonOnly: readonly string[] } {
  const fields: OptionField[] = [];
  const jsonOnly: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const kind = kindOf(property);
    if (kind === undefined) {
      jsonOnly.push(name);
      continue;
    }
    fields.push({
      name,
      kind,
      choices: kind === 'choice' ? (property.enum ?? []).filter((value) => typeof value === 'string' || typeof value === 'number') : [],
      description: property.description ?? '',
      limits: limitsOf(property),
      fallback: property.default === undefined ? undefined : shown(property.default),
    });
  }
  return { fields, jsonOnly };
}

/** Every service type's options as form fields (GET /services/types), by type. */
export async function loadTypeOptions(api: ApiClient): Promise<ReadonlyMap<ServiceType, TypeOptions>> {
  const { items } = await call(api.GET('/services/types'));
  return new Map(items.map((item) => [item.type, { description: item.description, ...optionFields(item.options as JsonSchema) }]));
}
