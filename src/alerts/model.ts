// Alert rules and alert instances (docs/reports-alerts.md "Alerts"). Store: src/store/alert-store.ts (migration 0034).
import type { Page, PageRequest } from '../domain/pagination.js';

export const SEVERITIES = ['critical', 'major', 'minor', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const THRESHOLD_OPS = ['>', '>=', '<', '<=', '==', '!='] as const;
export type ThresholdOp = (typeof THRESHOLD_OPS)[number];

/** An event of `event` whose `field` (a dotted path into the event: `data.temperature`) crosses `op value`. */
export interface ThresholdCondition {
  readonly type: 'threshold';
  readonly event: string;
  readonly field: string;
  readonly op: ThresholdOp;
  readonly value: number | string | boolean;
}

/** Endpoints (with all `tags`, if any) that are `unavailable` and were not heard from for `minutes`. */
export interface UnavailableCondition {
  readonly type: 'unavailable';
  readonly minutes: number;
  readonly tags?: string[] | undefined;
}

/** Endpoints with all `tags` that were not heard from for `minutes`, whatever their state. */
export interface NoDataCondition {
  readonly type: 'no-data';
  readonly minutes: number;
  readonly tags: string[];
}

/** The share of failed runs of one trigger (or of all the account's) over the last `minutes`, once `minRuns` ran. */
export interface TriggerFailuresCondition {
  readonly type: 'trigger-failures';
  readonly minutes: number;
  readonly percent: number;
  readonly minRuns: number;
  readonly triggerId?: string | undefined;
}

/** Conditions over state rather than one event: checked periodically by AlertWatch (src/alerts/alert-watch.ts). */
export type StateCondition = UnavailableCondition | NoDataCondition | TriggerFailuresCondition;
export type AlertCondition = ThresholdCondition | StateCondition;
export const CONDITION_TYPES = ['threshold', 'unavailable', 'no-data', 'trigger-failures'] as const;

export interface AlertNotify {
  /** Addresses mailed when an alert opens and closes (the service's SMTP server). */
  readonly email?: string[] | undefined;
  /** POSTed as JSON when an alert opens, changes state or closes; signed with the secret (HMAC-SHA256). */
  readonly webhook?: { readonly url: string; readonly secret: string } | undefined;
}

export interface AlertRule {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly severity: Severity;
  readonly tags: string[];
  readonly condition: AlertCondition;
  readonly notify: AlertNotify;
  readonly enabled: boolean;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export const ALERT_STATES = ['open', 'acknowledged', 'closed'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

export interface AlertChange {
  readonly state: AlertState;
  readonly at: string;
  /** `rule` (the condition), a token id or user id (the API), `script`. */
  readonly by: string;
  readonly note?: string;
}

export interface Alert {
  readonly id: string;
  readonly accountId: string;
  readonly ruleId: string | null;
  readonly name: string;
  readonly severity: Severity;
  readonly tags: string[];
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly state: AlertState;
  /** The value that crossed the threshold last, and how often it did while the alert was not closed. */
  readonly value: unknown;
  readonly occurrences: number;
  readonly openedAt: string;
  readonly updatedAt: string;
  readonly closedAt: string | null;
  readonly history: AlertChange[];
}

export interface AlertFilter {
  readonly tags?: readonly string[] | undefined;
  readonly states?: readonly AlertState[] | undefined;
  readonly severities?: readonly Severity[] | undefined;
  readonly endpointId?: string | undefined;
  readonly ruleId?: string | undefined;
}

export interface AlertStore {
  rules(accountId: string): Promise<AlertRule[]>;
  rule(accountId: string, id: string): Promise<AlertRule | undefined>;
  insertRule(rule: AlertRule): Promise<void>;
  updateRule(rule: AlertRule): Promise<void>;
  deleteRule(accountId: string, id: string): Promise<boolean>;
  get(accountId: string, id: string): Promise<Alert | undefined>;
  /** The alert of this rule and endpoint that is not closed, if any (one at most). */
  findOpen(accountId: string, ruleId: string, endpointId: string | null): Promise<Alert | undefined>;
  insert(alert: Alert): Promise<void>;
  update(alert: Alert): Promise<void>;
  /** The alerts of this rule that are not closed. */
  openOfRule(accountId: string, ruleId: string): Promise<Alert[]>;
  /** The alert a script raised under this name for this endpoint (null: none) that is not closed, if any. */
  findOpenByName(accountId: string, name: string, endpointId: string | null): Promise<Alert | undefined>;
  /** Every account's enabled rules (the periodic check of state conditions). */
  enabledRules(): Promise<AlertRule[]>;
  /**
   * The account's endpoints with all `tags` last heard from at or before `before` (epoch ms), `unavailable` ones only
   * when asked; never-heard endpoints are not counted. At most `limit`, the longest silent first.
   */
  silentEndpoints(accountId: string, query: { readonly tags: readonly string[]; readonly before: number; readonly unavailableOnly: boolean; readonly limit: number }): Promise<Array<{ id: string; key: string; lastSeenAt: string }>>;
  /** Newest first. */
  list(accountId: string, filter: AlertFilter, page: PageRequest): Promise<Page<Alert>>;
}
