// A template's parameters (docs/templates.md): the form schema the UI renders, the values an install gives, and
// their substitution into the document's strings as `{{name}}`.
import { Type, type Static } from 'typebox';
import { AppError } from '../errors.js';

export const PARAMETER_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export type ParameterType = (typeof PARAMETER_TYPES)[number];
type Scalar = string | number | boolean;

// Any JSON here, checked against `type` by checkDefinitions: a union of types would let the API's type coercion turn 5 into "5".
const Scalar = Type.Unknown({ description: 'A value of the parameter\'s type' });

export const ParameterDefinition = Type.Object(
  {
    type: Type.Enum([...PARAMETER_TYPES]),
    title: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    default: Type.Optional(Scalar),
    required: Type.Optional(Type.Boolean({ description: 'An install must give a value (or the default is used); default false' })),
    enum: Type.Optional(Type.Array(Scalar, { minItems: 1, maxItems: 200, description: 'The only values allowed' })),
  },
  { additionalProperties: false },
);
export type ParameterDefinition = Static<typeof ParameterDefinition>;

/** Parameter names: what `{{name}}` may hold. */
export const PARAMETER_NAME = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
const NAME = new RegExp(PARAMETER_NAME);
export const PARAMETERS_MAX = 100;

/** Checks the definitions themselves (a default or an enum value of another type than declared): 400 IOTB_TEMPLATE_INVALID. */
export function checkDefinitions(definitions: Readonly<Record<string, ParameterDefinition>>): void {
  const names = Object.keys(definitions);
  if (names.length > PARAMETERS_MAX) throw new AppError('IOTB_TEMPLATE_INVALID', `A template has at most ${PARAMETERS_MAX} parameters`);
  for (const name of names) {
    const definition = definitions[name]!;
    if (!NAME.test(name)) throw new AppError('IOTB_TEMPLATE_INVALID', `The parameter name "${name}" is not a name (${PARAMETER_NAME})`);
    for (const value of [...(definition.default === undefined ? [] : [definition.default]), ...(definition.enum ?? [])]) {
      if (!fits(definition.type, value)) throw new AppError('IOTB_TEMPLATE_INVALID', `The parameter "${name}" is a ${definition.type}: ${JSON.stringify(value)} is not`);
    }
    if (definition.default !== undefined && definition.enum && !definition.enum.includes(definition.default)) {
      throw new AppError('IOTB_TEMPLATE_INVALID', `The default of the parameter "${name}" is not one of its enum values`);
    }
  }
}

/**
 * The values an install uses: those given, else the defaults. Unknown names, missing required values, values
 * of the wrong type or outside the enum: 400 IOTB_TEMPLATE_PARAMETERS, each problem listed in `details.problems`.
 */
export function resolveValues(definitions: Readonly<Record<string, ParameterDefinition>>, given: Readonly<Record<string, unknown>>): Record<string, Scalar> {
  const problems: string[] = [];
  const values: Record<string, Scalar> = {};
  for (const name of Object.keys(given)) if (!Object.hasOwn(definitions, name)) problems.push(`"${name}" is not a parameter of the template`);
  for (const [name, definition] of Object.entries(definitions)) {
    const value = Object.hasOwn(given, name) ? given[name] : definition.default;
    if (value === undefined) {
      if (definition.required) problems.push(`"${name}" is required`);
      continue;
    }
    if (!fits(definition.type, value)) problems.push(`"${name}" must be a ${definition.type}`);
    else if (definition.enum && !definition.enum.includes(value)) problems.push(`"${name}" must be one of ${JSON.stringify(definition.enum)}`);
    else values[name] = value;
  }
  if (problems.length > 0) throw new AppError('IOTB_TEMPLATE_PARAMETERS', problems.join('; '), { problems });
  return values;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/;

/**
 * The document with `{{name}}` replaced in every string value (keys stay as they are). A string that is one
 * placeholder takes the typed value (a number stays a number); inside a longer string the value is text.
 * Only declared parameters are replaced: other `{{…}}` (in a script, say) are left alone; a declared one
 * without a value becomes the empty string.
 */
export function substitute(value: unknown, definitions: Readonly<Record<string, ParameterDefinition>>, values: Readonly<Record<string, Scalar>>): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole && Object.hasOwn(definitions, whole[1]!)) return values[whole[1]!] ?? '';
    return value.replace(PLACEHOLDER, (text, name: string) => (Object.hasOwn(definitions, name) ? String(values[name] ?? '') : text));
  }
  if (Array.isArray(value)) return value.map((item) => substitute(item, definitions, values));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, definitions, values)]));
  }
  return value;
}

function fits(type: ParameterType, value: unknown): value is Scalar {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isSafeInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
  }
}
