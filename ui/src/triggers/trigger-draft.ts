import { messageOf } from '../api/client';
import { FILTER_TYPES, type FilterType, type Trigger, type TriggerFilter, type TriggerWrite } from './trigger-types';

/** One filter row of the form: the value as typed. */
export interface FilterRow {
  readonly key: number;
  readonly type: FilterType;
  readonly field: string;
  readonly value: string;
}

/** One global variable row of the form: the value as JSON text. */
export interface GlobalRow {
  readonly key: number;
  readonly name: string;
  readonly value: string;
  readonly protected: boolean;
}

/** What the form holds: a trigger being written. */
export interface TriggerDraft {
  readonly name: string;
  readonly events: readonly string[];
  readonly filters: readonly FilterRow[];
  readonly enabled: boolean;
  readonly library: boolean;
  readonly globals: readonly GlobalRow[];
  readonly script: string;
}

let nextKey = 1;
export function rowKey(): number {
  return nextKey++;
}

export const EMPTY_DRAFT: TriggerDraft = { name: '', events: [], filters: [], enabled: true, library: false, globals: [], script: '' };

function valueText(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function draftOf(trigger: Trigger): TriggerDraft {
  return {
    name: trigger.name,
    events: trigger.events,
    filters: trigger.filters.map((filter) => ({ key: rowKey(), type: filter.type, field: filter.field ?? '', value: filter.type === 'one-of' ? JSON.stringify(filter.values ?? []) : valueText(filter.value) })),
    enabled: trigger.enabled,
    library: trigger.library,
    globals: Object.entries(trigger.globals).map(([name, variable]) => ({ key: rowKey(), name, value: JSON.stringify(variable.value), protected: variable.protected })),
    script: trigger.script,
  };
}

/** Text as JSON when it is JSON (`30`, `true`, `"a"`), else the text itself (`site:berlin`). */
function looseValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function filterOf(row: FilterRow, index: number): TriggerFilter {
  const spec = FILTER_TYPES.find((entry) => entry.type === row.type);
  const field = spec?.field === true && row.field.trim() !== '' ? { field: row.field.trim() } : {};
  if (row.type === 'one-of') {
    let values: unknown;
    try {
      values = JSON.parse(row.value);
    } catch (error) {
      throw new Error(`Filter ${index + 1}: the values are not JSON: ${messageOf(error)}`, { cause: error });
    }
    if (!Array.isArray(values)) throw new Error(`Filter ${index + 1}: the values must be a JSON array, e.g. ["a", "b"]`);
    return { type: row.type, ...field, values };
  }
  if (row.value === '') return { type: row.type, ...field };
  return { type: row.type, ...field, value: looseValue(row.value) };
}

/**
 * The body of POST/PUT /triggers from the form. Throws with the page's message for what only the page can
 * tell (a global's value that is not JSON); the API checks everything else and its message is shown.
 */
export function writeOf(draft: TriggerDraft, form: unknown): TriggerWrite {
  const globals: NonNullable<TriggerWrite['globals']> = {};
  for (const row of draft.globals) {
    let value: unknown;
    try {
      value = JSON.parse(row.value);
    } catch (error) {
      throw new Error(`The value of global variable “${row.name}” is not JSON: ${messageOf(error)}`, { cause: error });
    }
    globals[row.name] = { value, protected: row.protected };
  }
  return {
    name: draft.name,
    events: [...draft.events],
    filters: draft.filters.map(filterOf),
    script: draft.script,
    enabled: draft.enabled,
    library: draft.library,
    globals,
    ...(form === undefined || form === null ? {} : { form }),
  };
}
