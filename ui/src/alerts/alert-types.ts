// The alerts' types, from the generated API types (schema.d.ts), and the small formatting the pages share.
import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

/** An alert as `GET /alerts/{id}` answers it, its history included. */
export type Alert = ApiData<'/alerts/{id}'>;
export type AlertPage = ApiData<'/alerts'>;
export type AlertChange = Alert['history'][number];
export type AlertState = Alert['state'];
export type Severity = Alert['severity'];
/** The body of `PATCH /alerts/{id}`. */
export type AlertPatch = paths['/alerts/{id}']['patch']['requestBody']['content']['application/json'];

/** A rule as the API shows it (the webhook secret only as `hasSecret`). */
export type AlertRule = ApiData<'/alert-rules/{id}'>;
/** The body of `POST /alert-rules` and `PUT /alert-rules/{id}`. */
export type RuleBody = paths['/alert-rules']['post']['requestBody']['content']['application/json'];
/** What a rule watches: threshold, unavailable, no-data or trigger-failures (docs/reports-alerts.md "Alerts"). */
export type RuleCondition = RuleBody['condition'];
export type ConditionType = RuleCondition['type'];
export type ThresholdCondition = Extract<RuleCondition, { type: 'threshold' }>;

export const SEVERITIES: readonly Severity[] = ['critical', 'major', 'minor', 'warning', 'info'];
export const ALERT_STATES: readonly AlertState[] = ['open', 'acknowledged', 'closed'];
export const THRESHOLD_OPS: readonly ThresholdCondition['op'][] = ['>', '>=', '<', '<=', '==', '!='];

export const CONDITION_KINDS: ReadonlyArray<{ readonly type: ConditionType; readonly label: string; readonly hint: string }> = [
  { type: 'threshold', label: 'Threshold', hint: 'An event whose field crosses a value opens an alert for its endpoint; one that no longer crosses closes it.' },
  { type: 'unavailable', label: 'Endpoint unavailable', hint: 'Endpoints (with all the tags, if any) unavailable for at least the minutes given.' },
  { type: 'no-data', label: 'No data', hint: 'Endpoints with all the tags not heard from for the minutes given, whatever their state.' },
  { type: 'trigger-failures', label: 'Trigger failures', hint: 'The share of failed runs of one trigger, or of all of them, over the last minutes.' },
];

/** A value as a cell shows it: text as it is, anything else as compact JSON, nothing as ''. */
export function valueText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A rule's condition in one line: "reading: data.temperature > 8", "No data from endpoints tagged x for 30 min". */
export function conditionText(condition: RuleCondition, triggerNames: ReadonlyMap<string, string> = new Map()): string {
  const tags = (list: readonly string[] | undefined) => (list === undefined || list.length === 0 ? '' : ` tagged ${list.join(', ')}`);
  switch (condition.type) {
    case 'threshold':
      return `${condition.event}: ${condition.field} ${condition.op} ${JSON.stringify(condition.value)}`;
    case 'unavailable':
      return `Endpoints${tags(condition.tags)} unavailable ≥ ${condition.minutes} min`;
    case 'no-data':
      return `No data from endpoints${tags(condition.tags)} for ${condition.minutes} min`;
    case 'trigger-failures':
      return `${condition.triggerId === undefined ? 'All triggers' : `Trigger “${triggerNames.get(condition.triggerId) ?? condition.triggerId}”`}: ≥ ${condition.percent} % of runs failed over ${condition.minutes} min${condition.minRuns === undefined || condition.minRuns === 1 ? '' : `, ${condition.minRuns} runs at least`}`;
  }
}
