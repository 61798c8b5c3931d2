/**
 * Table shapes of operations: import jobs, logs, alerts and their rules, reports, solution templates and installations.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Generated } from 'kysely';

/** An import job (src/imex/import-jobs.ts, migration 0042); `counts` is JSON, `updated_at` the running job's heartbeat. */
export interface ImportJobsTable {
  id: string;
  account_id: string;
  state: string;
  dry_run: number;
  counts: string;
  error: string | null;
  started_at: number;
  finished_at: number | null;
  updated_at: number;
}

export interface LogsTable {
  seq: Generated<number>;
  account_id: string;
  time: number;
  /** error, warn, info, debug. */
  level: string;
  /** script, api, device, audit, alert, … */
  source: string;
  message: string;
  endpoint_id: string | null;
  endpoint_key: string | null;
  trigger_id: string | null;
  /** JSON object, or null. */
  data: string | null;
}

export interface AlertRulesTable {
  id: string;
  account_id: string;
  name: string;
  severity: string;
  /** JSON: string[]. */
  tags: string;
  /** JSON: AlertCondition. */
  condition: string;
  /** JSON: AlertNotify (the webhook secret included: never returned by the API). */
  notify: string;
  /** 1 or 0. */
  enabled: number;
  created_at: number;
  updated_at: number;
}

export interface AlertsTable {
  id: string;
  account_id: string;
  rule_id: string | null;
  name: string;
  severity: string;
  /** JSON: string[]. */
  tags: string;
  endpoint_id: string | null;
  endpoint_key: string | null;
  state: string;
  /** JSON. */
  value: string | null;
  occurrences: number;
  opened_at: number;
  updated_at: number;
  closed_at: number | null;
  /** JSON: AlertChange[]. */
  history: string;
}

export interface ReportsTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** JSON: ReportColumn[]. */
  columns: string;
  retention_days: number;
  created_at: number;
  updated_at: number;
  /** JSON: ReportSchedule, or null when the report is not mailed. */
  schedule: string | null;
  next_send_at: number | null;
  last_sent_at: number | null;
}

export interface ReportEntriesTable {
  id: Generated<number>;
  report_id: string;
  time: number;
  /** JSON object. */
  data: string;
}

/** The template catalogue (src/solutions/): parameters and document as JSON text. */
export interface SolutionTemplatesTable {
  id: string;
  account_id: string;
  account_path: string;
  name: string;
  version: string;
  description: string;
  parameters: string;
  document: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** One installation per template name and account; `snapshot` (JSON) is what it applied, read back. */
export interface SolutionInstallationsTable {
  id: string;
  account_id: string;
  template_id: string;
  template_name: string;
  version: string;
  parameters: string;
  snapshot: string;
  installed_at: number;
  updated_at: number;
  installed_by: string;
}

/** Installs, upgrades and uninstalls, in the order they were recorded (`seq`). */
export interface SolutionHistoryTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  installation_id: string;
  template_id: string;
  template: string;
  version: string;
  action: string;
  outcome: string;
  parameters: string;
  details: string;
  at: number;
  acted_by: string;
}
