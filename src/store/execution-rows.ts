import { storableText } from '../domain/storable-text.js';
import type { Execution } from '../triggers/executions.js';
import { toJson } from './schema.js';
import { toMs } from './sql.js';

/**
 * An execution record as its `executions` row is written, by every writer (the SQLite hot path, SQLite's VALUES,
 * PostgreSQL's arrays): the error and the JSON columns as both databases store them (storable-text.ts). Empty logs,
 * context and groups, most runs', skip `JSON.stringify`.
 */
export function executionRow(execution: Execution) {
  return {
    id: execution.id,
    account_id: execution.accountId,
    trigger_id: execution.triggerId,
    event_id: execution.eventId,
    event_type: execution.eventType,
    started_at: toMs(execution.startedAt),
    duration_ms: execution.durationMs,
    status: execution.status,
    error: storableText(execution.error),
    line: execution.line,
    logs: execution.logs.length === 0 ? '[]' : toJson(execution.logs),
    test: execution.test ? 1 : 0,
    context: isEmpty(execution.context) ? '{}' : toJson(execution.context),
    groups: execution.groups.length === 0 ? '[]' : toJson(execution.groups),
  };
}

function isEmpty(object: Record<string, unknown>): boolean {
  for (const _key in object) return false;
  return true;
}

/**
 * A record with no error, line, log, context or groups, and not a test: most runs'. Its row's last six columns are
 * constants (`null, null, '[]', 0, '{}', '[]'`), which the bulk writers put in the statement instead of binding
 * them a row at a time (docs/performance.md, session 37).
 */
export function isPlainExecution(execution: Execution): boolean {
  if (execution.error !== null || execution.line !== null || execution.logs.length > 0 || execution.test || execution.groups.length > 0) return false;
  return isEmpty(execution.context);
}
