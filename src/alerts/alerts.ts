import { newId } from '../domain/ids.js';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import type { Event } from '../events/event.js';
import type { AlertNotifier, AlertTransition } from './alert-notifier.js';
import type { AlertRules } from './alert-rules.js';
import type { Alert, AlertFilter, AlertRule, AlertStore, Severity, ThresholdCondition } from './model.js';

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

/** What an alert is about: an endpoint, or nothing (a trigger's failure rate), and the value that made it. */
export interface Subject {
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly value: unknown;
}

/** An alert a script raises (`alert.raise`). */
export interface RaisedAlert {
  readonly name: string;
  readonly severity: Severity;
  readonly tags: readonly string[];
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly value?: unknown;
  readonly note?: string | undefined;
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
    for (const rule of await this.#rules.enabled(event.accountId)) {
      const condition = rule.condition;
      if (condition.type !== 'threshold' || condition.event !== event.type) continue;
      const value = valueAt(event, condition.field);
      const crossed = crosses(condition, value);
      if (crossed === undefined) continue;
      const open = await this.#store.findOpen(event.accountId, rule.id, event.endpointId);
      if (crossed && !open) await this.#open(rule, { endpointId: event.endpointId, endpointKey: event.endpointKey, value });
      else if (crossed && open) await this.#store.update({ ...open, value, occurrences: open.occurrences + 1, updatedAt: isoTime(Date.now()) });
      else if (!crossed && open) {
        const closed = this.#moved(open, 'closed', 'rule', 'the condition cleared', value);
        await this.#store.update(closed);
        await this.#notify(closed, 'closed', rule);
      }
    }
  }

  /**
   * A state condition's periodic check (AlertWatch): opens an alert for each subject that matches and has none,
   * and closes the rule's alerts whose subject no longer matches. An alert that stays open is not rewritten.
   */
  async reconcile(rule: AlertRule, matching: readonly Subject[]): Promise<{ opened: number; closed: number }> {
    const open = await this.#store.openOfRule(rule.accountId, rule.id);
    const openBySubject = new Map(open.map((alert) => [alert.endpointId ?? '', alert]));
    let opened = 0;
    for (const subject of matching) {
      if (openBySubject.delete(subject.endpointId ?? '')) continue;
      await this.#open(rule, subject);
      opened++;
    }
    for (const alert of openBySubject.values()) {
      const closed = this.#moved(alert, 'closed', 'rule', 'the condition cleared');
      await this.#store.update(closed);
      await this.#notify(closed, 'closed', rule);
    }
    return { opened, closed: openBySubject.size };
  }

  /**
   * `alert.raise` in scripts: opens an alert of no rule, or counts another occurrence on the one of that name and
   * endpoint that is not closed.
   */
  async raise(scope: Scope, input: RaisedAlert): Promise<Alert> {
    const open = await this.#store.findOpenByName(scope.accountId, input.name, input.endpointId);
    if (open) {
      const updated: Alert = { ...open, value: input.value ?? open.value, occurrences: open.occurrences + 1, updatedAt: isoTime(Date.now()) };
      await this.#store.update(updated);
      return updated;
    }
    const now = isoTime(Date.now());
    const alert: Alert = {
      id: newId(),
      accountId: scope.accountId,
      ruleId: null,
      name: input.name,
      severity: input.severity,
      tags: [...new Set(input.tags)],
      endpointId: input.endpointId,
      endpointKey: input.endpointKey,
      state: 'open',
      value: input.value ?? null,
      occurrences: 1,
      openedAt: now,
      updatedAt: now,
      closedAt: null,
      history: [{ state: 'open', at: now, by: 'script', ...(input.note ? { note: input.note } : {}) }],
    };
    await this.#store.insert(alert);
    await this.#notify(alert, 'opened');
    return alert;
  }

  /** `alert.close` in scripts: by id, or the open alert a script raised under that name (and endpoint); undefined: none. */
  async closeRaised(scope: Scope, target: { id: string } | { name: string; endpointId: string | null }, note?: string): Promise<Alert | undefined> {
    const alert = 'id' in target ? await this.#store.get(scope.accountId, target.id) : await this.#store.findOpenByName(scope.accountId, target.name, target.endpointId);
    if (!alert || alert.state === 'closed') return alert;
    const closed = this.#moved(alert, 'closed', 'script', note);
    await this.#store.update(closed);
    await this.#notify(closed, 'closed');
    return closed;
  }

  async #open(rule: AlertRule, subject: Subject): Promise<void> {
    const now = isoTime(Date.now());
    const alert: Alert = {
      id: newId(),
      accountId: rule.accountId,
      ruleId: rule.id,
      name: rule.name,
      severity: rule.severity,
      tags: rule.tags,
      endpointId: subject.endpointId,
      endpointKey: subject.endpointKey,
      state: 'open',
      value: subject.value,
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
