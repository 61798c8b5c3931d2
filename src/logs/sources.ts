import type { Scope } from '../domain/scope.js';
import type { Event } from '../events/event.js';
import type { Execution } from '../triggers/executions.js';
import type { LogInput } from './model.js';

/** Lines of one trigger run that become log entries (the execution record keeps up to 100). */
export const SCRIPT_LINES_MAX = 20;
/** A device refusal is logged once per endpoint and reason in this window: a device retrying must not flood its log. */
export const DEVICE_REFUSAL_WINDOW_MS = 10_000;

/**
 * What a trigger run adds to its account's log: each line it logged (`log`, `console.*`) at info, at most
 * SCRIPT_LINES_MAX of them, and the error of a failed run at error level; with the trigger and the event's
 * endpoint. Nothing for a run that logged nothing and succeeded (most runs).
 */
export function scriptRunEntries(execution: Execution, event: Event): LogInput[] {
  const base = {
    accountId: execution.accountId,
    source: 'script' as const,
    triggerId: execution.triggerId,
    endpointId: event.endpointId,
    endpointKey: event.endpointKey,
  };
  const data = { executionId: execution.id, eventId: execution.eventId, eventType: execution.eventType, ...(execution.test ? { test: true } : {}) };
  const entries: LogInput[] = execution.logs.slice(0, SCRIPT_LINES_MAX).map((line) => ({ ...base, level: 'info', message: line, data }));
  if (execution.logs.length > SCRIPT_LINES_MAX) {
    entries.push({ ...base, level: 'info', message: `… ${execution.logs.length - SCRIPT_LINES_MAX} more lines in the execution record`, data });
  }
  if (execution.status === 'failed') {
    entries.push({ ...base, level: 'error', message: `run failed: ${execution.error ?? 'unknown error'}`, data: { ...data, ...(execution.line === null ? {} : { line: execution.line }) } });
  }
  return entries;
}

/** Who made an API call, for the entry's data: the user behind a user token, else the token. */
function principalOf(scope: Scope): Record<string, unknown> {
  const { principal } = scope;
  return {
    ...(principal.userId === null ? {} : { userId: principal.userId }),
    tokenId: principal.tokenId,
    ...(principal.accountId === scope.accountId ? {} : { actingFrom: principal.accountId }),
    ...(principal.impersonatedBy === undefined ? {} : { impersonatedBy: principal.impersonatedBy }),
  };
}

/** The endpoint an API call named (`/endpoints/{ref}/…`), so that the `endpoint` filter finds its calls. */
export interface CallEndpoint {
  readonly endpointId?: string | undefined;
  readonly endpointKey?: string | undefined;
}

/** `METHOD path → status CODE: message` at warn (4xx) or error (5xx). */
export function apiErrorEntry(scope: Scope, call: { method: string; path: string; status: number; code: string; message: string; endpoint?: CallEndpoint | undefined }): LogInput {
  return {
    accountId: scope.accountId,
    ...call.endpoint,
    level: call.status >= 500 ? 'error' : 'warn',
    source: 'api',
    message: `${call.method} ${call.path} → ${call.status} ${call.code}: ${call.message}`,
    data: { status: call.status, code: call.code, ...principalOf(scope) },
  };
}

/** A change made through the API: `METHOD route-path`, who made it and the object it changed. */
export function auditEntry(scope: Scope, call: { method: string; route: string; status: number; objectId: string | undefined; endpoint?: CallEndpoint | undefined }): LogInput {
  return {
    accountId: scope.accountId,
    ...call.endpoint,
    level: 'info',
    source: 'audit',
    message: `${call.method} ${call.route}`,
    data: { status: call.status, ...principalOf(scope), ...(call.objectId === undefined ? {} : { objectId: call.objectId }) },
  };
}

/** True at most once per key and window; a bounded memory of keys (a flood of new keys clears it). */
export class Throttle {
  readonly #windowMs: number;
  readonly #last = new Map<string, number>();

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  allow(key: string, now = Date.now()): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && now - last < this.#windowMs) return false;
    if (this.#last.size >= 10_000) this.#last.clear();
    this.#last.set(key, now);
    return true;
  }
}
