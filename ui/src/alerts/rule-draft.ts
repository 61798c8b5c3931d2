// The alert rule form's state (every field as typed) and the API body made from it.
import { splitTags } from '../endpoints/endpoint-query';
import type { RuleField } from './rule-errors';
import type { AlertRule, ConditionType, RuleBody, RuleCondition, Severity, ThresholdCondition } from './alert-types';

/** What the form holds: a rule being written, each field as its input holds it. */
export interface RuleDraft {
  readonly name: string;
  readonly severity: Severity;
  readonly tags: string;
  readonly enabled: boolean;
  readonly kind: ConditionType;
  // threshold
  readonly event: string;
  readonly field: string;
  readonly op: ThresholdCondition['op'];
  readonly value: string;
  // unavailable, no-data, trigger-failures
  readonly minutes: string;
  readonly conditionTags: string;
  readonly percent: string;
  readonly minRuns: string;
  readonly triggerId: string;
  // notify
  readonly emails: string;
  readonly webhookUrl: string;
  /** Write-only: empty on an edit keeps the stored one. */
  readonly webhookSecret: string;
}

export const EMPTY_DRAFT: RuleDraft = {
  name: '',
  severity: 'major',
  tags: '',
  enabled: true,
  kind: 'threshold',
  event: '',
  field: 'data.',
  op: '>',
  value: '',
  minutes: '15',
  conditionTags: '',
  percent: '50',
  minRuns: '',
  triggerId: '',
  emails: '',
  webhookUrl: '',
  webhookSecret: '',
};

/** Text as JSON when it is a number, boolean or quoted string (`8`, `true`, `"8"`), else the text itself (`open`). */
export function thresholdValue(text: string): number | string | boolean {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') return value;
  } catch {
    // Not JSON: plain text.
  }
  return text;
}

/** A threshold value as the field shows it: text that would read back as something else is quoted (`"8"`). */
function valueInput(value: ThresholdCondition['value']): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  return thresholdValue(value) === value ? value : JSON.stringify(value);
}

const numberText = (value: number | undefined) => (value === undefined ? '' : String(value));

export function draftOf(rule: AlertRule): RuleDraft {
  const { condition } = rule;
  const base: RuleDraft = {
    ...EMPTY_DRAFT,
    name: rule.name,
    severity: rule.severity,
    tags: rule.tags.join(', '),
    enabled: rule.enabled,
    kind: condition.type,
    emails: (rule.notify.email ?? []).join(', '),
    webhookUrl: rule.notify.webhook?.url ?? '',
  };
  switch (condition.type) {
    case 'threshold':
      return { ...base, event: condition.event, field: condition.field, op: condition.op, value: valueInput(condition.value) };
    case 'unavailable':
    case 'no-data':
      return { ...base, minutes: numberText(condition.minutes), conditionTags: (condition.tags ?? []).join(', ') };
    case 'trigger-failures':
      return { ...base, minutes: numberText(condition.minutes), percent: numberText(condition.percent), minRuns: numberText(condition.minRuns), triggerId: condition.triggerId ?? '' };
  }
}

/** A number field: '' is left out (the API names what is missing), anything else is sent as a number. */
function numberOf(text: string): number | undefined {
  return text.trim() === '' ? undefined : Number(text);
}

// A number or value left empty is undefined here, which JSON leaves out: the API's answer then names the field.
function conditionOf(draft: RuleDraft): RuleCondition {
  const minutes = numberOf(draft.minutes) as number;
  switch (draft.kind) {
    case 'threshold': {
      const value = draft.value.trim() === '' ? undefined : thresholdValue(draft.value.trim());
      return { type: 'threshold', event: draft.event.trim(), field: draft.field.trim(), op: draft.op, ...(value !== undefined && { value }) } as ThresholdCondition;
    }
    case 'unavailable': {
      const tags = splitTags(draft.conditionTags);
      return { type: 'unavailable', minutes, ...(tags.length > 0 && { tags }) };
    }
    case 'no-data':
      return { type: 'no-data', minutes, tags: splitTags(draft.conditionTags) };
    case 'trigger-failures': {
      const minRuns = numberOf(draft.minRuns);
      return { type: 'trigger-failures', minutes, percent: numberOf(draft.percent) as number, ...(minRuns !== undefined && { minRuns }), ...(draft.triggerId !== '' && { triggerId: draft.triggerId }) };
    }
  }
}

/** "a@b.c, d@e.f; g@h.i" → three addresses (commas, semicolons or spaces between them). */
export function splitEmails(text: string): string[] {
  return text.split(/[\s,;]+/).filter((address) => address !== '');
}

/** The body of POST / PUT /alert-rules: a webhook only with a URL or a secret typed. */
export function bodyOf(draft: RuleDraft): RuleBody {
  const email = splitEmails(draft.emails);
  const url = draft.webhookUrl.trim();
  const webhook = url === '' && draft.webhookSecret === '' ? undefined : { url, secret: draft.webhookSecret };
  return {
    name: draft.name.trim(),
    severity: draft.severity,
    tags: splitTags(draft.tags),
    condition: conditionOf(draft),
    notify: { ...(email.length > 0 && { email }), ...(webhook !== undefined && { webhook }) },
    enabled: draft.enabled,
  };
}

const KIND_FIELDS: Readonly<Record<ConditionType, readonly RuleField[]>> = {
  threshold: ['condition.event', 'condition.field', 'condition.op', 'condition.value'],
  unavailable: ['condition.minutes', 'condition.tags'],
  'no-data': ['condition.minutes', 'condition.tags'],
  'trigger-failures': ['condition.minutes', 'condition.percent', 'condition.minRuns', 'condition.triggerId'],
};

/** The fields the form shows, with a place for a message, for a kind of condition: where the API's complaints go. */
export function shownFields(kind: ConditionType): readonly RuleField[] {
  return ['name', 'severity', 'tags', 'condition.type', ...KIND_FIELDS[kind], 'notify.email', 'notify.webhook.url', 'notify.webhook.secret'];
}
