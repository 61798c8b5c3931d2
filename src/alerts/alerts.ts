import { newId } from '../domain/ids.js';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import type { Event } from '../events/event.js';
import type { AlertNotifier, AlertTransition } from './alert-notifier.js';
import type { AlertRules } from './alert-rules.js';
import type { Alert, AlertFilter, AlertRule, AlertStore, ThresholdCondition } from './model.js';

/** The value at a dotted path of the event (`data.temperature`, `endpointKey`), or undefined. */
function valueAt(event: Event, path: string): unknown {
  let current: unknown = event;
  for (const part of path.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Whether `value` crosses the condition; undefined when the event does not carry a comparable value. */
export function crosses(condition: ThresholdCondition, value: unknown): boolean | undefined {
  const threshold = condition.value;
  if (typeof threshold === 'number') {
    const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
    if (!Number.isFinite(number)) return undefined;
    switch (condition.op) {
      case '>': return number > threshold;
      case '>=': return number >= threshold;
      case '<': return number < threshold;
      case '<=': return number <= threshold;
      case '==': return number === threshold;
      case '!=': return number !== threshold;
    }
  }
  if (value === undefined || value === null || typeof value === 'object') return undefined;
  return condition.op === '==' ? value === threshold : value !== threshold;
}

/**
 * Alert instances (`/alerts`): opened by rules as events cross their conditions, one at most per rule and
 * endpoint that is not closed (another crossing counts an occurrence), acknowledged by people, closed by people
 * or by the rule when an event no longer crosses it. Every change is kept in the alert's history and notified
 * (AlertNotifier). Evaluated as a consumer of the event bus: one endpoint's events in order.
 */
export class Alerts {
  readonly #store: AlertStore;
  readonly #rules: AlertRules;
  readonly #notifier: AlertNotifier;

  constructor(store: AlertStore, rules: AlertRules, notifier: AlertNotifier) {
    this.#store = store;
    this.#rules = rules;
    this.#notifier = notifier;
  }

  list(scope: Scope, filter: AlertFilter, page: PageRequest): Promise<Page<Alert>> {
    return this.#store.list(scope.accountId, filter, page);
  }

  async get(scope: Scope, id: string): Promise<Alert> {
    const alert = await this.#store.get(scope.accountId, id);
    if (!alert) throw new AppError('IOTB_ALERT_NOT_FOUND');
    return alert;
  }

  /** `acknowledged` (from open) or `closed` (from open or acknowledged), by whoever calls. */
  async changeState(scope: Scope, id: string, state: 'acknowledged' | 'closed', note?: string): Promise<Alert> {
    const alert = await this.get(scope, id);
    if (alert.state === state) return alert;
    if (alert.state === 'closed' || (state === 'acknowledged' && alert.state !== 'open')) throw new AppError('IOTB_ALERT_STATE', undefined, { state: alert.state });
    const by = scope.principal.userId ?? scope.principal.tokenId;
    const changed = this.#moved(alert, state, by, note);
    await this.#store.update(changed);
    await this.#notify(changed, state === 'closed' ? 'closed' : 'acknowledged');
    return changed;
  }

  /** The bus consumer: evaluates the event against the account's enabled rules that watch its type. */
  async evaluate(event: Event): Promise<void> {
    if (event.type === 'alert') return;
    const rules = (await this.#rules.enabled(event.accountId)).filter((rule) => rule.condition.event === event.type);
    for (const rule of rules) {
      const value = valueAt(event, rule.condition.field);
      const crossed = crosses(rule.condition, value);
      if (crossed === undefined) continue;
      const open = await this.#store.findOpen(event.accountId, rule.id, event.endpointId);
      if (crossed && !open) await this.#open(rule, event, value);
      else if (crossed && open) await this.#store.update({ ...open, value, occurrences: open.occurrences + 1, updatedAt: isoTime(Date.now()) });
      else if (!crossed && open) {
        const closed = this.#moved(open, 'closed', 'rule', 'the condition cleared', value);
        await this.#store.update(closed);
        await this.#notify(closed, 'closed', rule);
      }
    }
  }

  async #open(rule: AlertRule, event: Event, value: unknown): Promise<void> {
    const now = isoTime(Date.now());
    const alert: Alert = {
      id: newId(),
      accountId: event.accountId,
      ruleId: rule.id,
      name: rule.name,
      severity: rule.severity,
      tags: rule.tags,
      endpointId: event.endpointId,
      endpointKey: event.endpointKey,
      state: 'open',
      value,
      occurrences: 1,
      openedAt: now,
      updatedAt: now,
      closedAt: null,
      history: [{ state: 'open', at: now, by: 'rule' }],
    };
    await this.#store.insert(alert);
    await this.#notify(alert, 'opened', rule);
  }

  #moved(alert: Alert, state: 'acknowledged' | 'closed', by: string, note?: string, value?: unknown): Alert {
    const now = isoTime(Date.now());
    return {
      ...alert,
      state,
      ...(value === undefined ? {} : { value }),
      updatedAt: now,
      closedAt: state === 'closed' ? now : alert.closedAt,
      history: [...alert.history, { state, at: now, by, ...(note ? { note } : {}) }],
    };
  }

  async #notify(alert: Alert, transition: AlertTransition, rule?: AlertRule): Promise<void> {
    const found = rule ?? (alert.ruleId ? (await this.#rules.enabled(alert.accountId)).find((candidate) => candidate.id === alert.ruleId) : undefined);
    await this.#notifier.notify(alert, transition, found);
  }
}
