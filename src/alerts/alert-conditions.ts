// What an alert rule may watch (docs/reports-alerts.md "Conditions"), checked once when a rule is written.
import { AppError } from '../errors.js';
import { THRESHOLD_OPS, type AlertCondition } from './model.js';

/** Fractions of a minute are allowed down to 6 s; a week at most. */
export const MINUTES_MIN = 0.1;
export const MINUTES_MAX = 7 * 24 * 60;
const TAG = /^[^:\s][^:]*(:.*)?$/;

export function checkCondition(value: unknown): AlertCondition {
  const condition = value as Record<string, unknown> | null;
  if (typeof condition !== 'object' || condition === null) throw invalid('condition', 'condition is an object with a type');
  // Built here with `type` first: the stored JSON of every rule starts with it.
  switch (condition.type) {
    case 'threshold':
      return threshold(condition);
    case 'unavailable': {
      const tags = tagList(condition.tags, false);
      return { type: 'unavailable', minutes: minutes(condition.minutes), ...(tags.length > 0 && { tags }) };
    }
    case 'no-data':
      return { type: 'no-data', minutes: minutes(condition.minutes), tags: tagList(condition.tags, true) };
    case 'trigger-failures': {
      const percent = condition.percent;
      if (typeof percent !== 'number' || !(percent > 0 && percent <= 100)) throw invalid('condition.percent', 'condition.percent is the share of failed runs that raises the alert, above 0 and at most 100');
      const minRuns = condition.minRuns ?? 1;
      if (typeof minRuns !== 'number' || !Number.isInteger(minRuns) || minRuns < 1 || minRuns > 1_000_000) throw invalid('condition.minRuns', 'condition.minRuns is a whole number ≥ 1: fewer runs in the period never raise the alert');
      const triggerId = condition.triggerId;
      if (triggerId !== undefined && (typeof triggerId !== 'string' || triggerId === '')) throw invalid('condition.triggerId', 'condition.triggerId is the id of one of the account\'s triggers (absent: all of them)');
      return { type: 'trigger-failures', minutes: minutes(condition.minutes), percent, minRuns, ...(triggerId !== undefined && { triggerId }) };
    }
    default:
      throw invalid('condition.type', 'condition.type is one of threshold, unavailable, no-data, trigger-failures');
  }
}

function threshold(condition: Record<string, unknown>): AlertCondition {
  const { event, field, op, value } = condition;
  if (typeof event !== 'string' || event === '') throw invalid('condition.event', 'condition.event is the event type the rule watches');
  if (typeof field !== 'string' || !/^[A-Za-z_$][\w$]*(\.[\w$-]+)*$/.test(field)) throw invalid('condition.field', 'condition.field is a dotted path into the event, e.g. data.temperature');
  if (!THRESHOLD_OPS.includes(op as never)) throw invalid('condition.op', `condition.op is one of ${THRESHOLD_OPS.join(' ')}`);
  if (typeof value !== 'number' && typeof value !== 'string' && typeof value !== 'boolean') throw invalid('condition.value', 'condition.value is a number, string or boolean');
  if (typeof value !== 'number' && op !== '==' && op !== '!=') throw invalid('condition.op', 'only == and != compare a string or boolean');
  return { type: 'threshold', event, field, op: op as (typeof THRESHOLD_OPS)[number], value };
}

function minutes(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < MINUTES_MIN || value > MINUTES_MAX) {
    throw invalid('condition.minutes', `condition.minutes is a number from ${MINUTES_MIN} to ${MINUTES_MAX} (a week)`);
  }
  return value;
}

function tagList(value: unknown, required: boolean): string[] {
  if (value === undefined && !required) return [];
  if (!Array.isArray(value) || (required && value.length === 0) || value.length > 10 || !value.every((tag) => typeof tag === 'string' && TAG.test(tag))) {
    throw invalid('condition.tags', `condition.tags is a list of up to 10 endpoint tags ("name" or "name:value")${required ? ', at least one' : ''}`);
  }
  return [...new Set(value as string[])];
}

export function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}
