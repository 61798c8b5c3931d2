import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { checkCondition, invalid } from './alert-conditions.js';
import { SEVERITIES, type AlertNotify, type AlertRule, type AlertStore, type Severity } from './model.js';

/** Rules one account may have. */
export const ALERT_RULES_MAX = 1000;

export interface AlertRuleInput {
  readonly name: string;
  readonly severity: Severity;
  readonly tags?: readonly string[] | undefined;
  readonly condition: unknown;
  readonly notify?: { readonly email?: readonly string[] | undefined; readonly webhook?: { readonly url: string; readonly secret: string } | undefined } | undefined;
  readonly enabled?: boolean | undefined;
}

/** A rule as the API shows it: the webhook secret is write-only. */
export type ShownRule = Omit<AlertRule, 'notify'> & { readonly notify: { readonly email?: string[]; readonly webhook?: { readonly url: string; readonly hasSecret: true } } };

/**
 * The account's alert rules (`/alert-rules`). The enabled ones are held per account in memory for the evaluation
 * of every event, and dropped on any change made here (one process).
 */
export class AlertRules {
  readonly #store: AlertStore;
  readonly #checkUrl: (url: string) => void;
  readonly #cached = new Map<string, Promise<AlertRule[]>>();

  constructor(store: AlertStore, options: { checkUrl: (url: string) => void }) {
    this.#store = store;
    this.#checkUrl = options.checkUrl;
  }

  async list(scope: Scope, filter: { tags?: readonly string[] | undefined }): Promise<ShownRule[]> {
    const rules = await this.#store.rules(scope.accountId);
    return rules.filter((rule) => (filter.tags ?? []).every((tag) => rule.tags.includes(tag))).map(shown);
  }

  /** The account's rules with their webhook secrets: only for a sealed export (docs/imex.md "Secrets"). */
  withSecrets(scope: Scope): Promise<AlertRule[]> {
    return this.#store.rules(scope.accountId);
  }

  async get(scope: Scope, id: string): Promise<ShownRule> {
    return shown(await this.#rule(scope, id));
  }

  async create(scope: Scope, input: AlertRuleInput): Promise<ShownRule> {
    if ((await this.#store.rules(scope.accountId)).length >= ALERT_RULES_MAX) throw new AppError('IOTB_REQUEST_VALIDATION', `An account has at most ${ALERT_RULES_MAX} alert rules`);
    const now = isoTime(Date.now());
    const rule = this.#build({ id: newId(), accountId: scope.accountId, createdAt: now, updatedAt: now }, input);
    await this.#store.insertRule(rule);
    this.#cached.delete(scope.accountId);
    return shown(rule);
  }

  /** Replaces the rule; a webhook given without its secret keeps the stored one. */
  async replace(scope: Scope, id: string, input: AlertRuleInput): Promise<ShownRule> {
    const before = await this.#rule(scope, id);
    const webhook = input.notify?.webhook;
    const keepSecret = webhook && !webhook.secret && before.notify.webhook ? { ...input, notify: { ...input.notify, webhook: { url: webhook.url, secret: before.notify.webhook.secret } } } : input;
    const rule = this.#build({ id, accountId: scope.accountId, createdAt: before.createdAt, updatedAt: isoTime(Date.now()) }, keepSecret);
    await this.#store.updateRule(rule);
    this.#cached.delete(scope.accountId);
    return shown(rule);
  }

  async delete(scope: Scope, id: string): Promise<void> {
    if (!(await this.#store.deleteRule(scope.accountId, id))) throw new AppError('IOTB_ALERT_RULE_NOT_FOUND');
    this.#cached.delete(scope.accountId);
  }

  /** The account's enabled rules, secrets included: for the evaluation and the notifications. */
  enabled(accountId: string): Promise<AlertRule[]> {
    let rules = this.#cached.get(accountId);
    if (!rules) {
      rules = this.#store.rules(accountId).then((all) => all.filter((rule) => rule.enabled));
      rules.catch(() => this.#cached.delete(accountId));
      this.#cached.set(accountId, rules);
    }
    return rules;
  }

  async #rule(scope: Scope, id: string): Promise<AlertRule> {
    const rule = await this.#store.rule(scope.accountId, id);
    if (!rule) throw new AppError('IOTB_ALERT_RULE_NOT_FOUND');
    return rule;
  }

  #build(base: Pick<AlertRule, 'id' | 'accountId' | 'createdAt' | 'updatedAt'>, input: AlertRuleInput): AlertRule {
    if (!SEVERITIES.includes(input.severity)) throw invalid('severity', `severity is one of ${SEVERITIES.join(', ')}`);
    return {
      ...base,
      name: input.name,
      severity: input.severity,
      tags: [...new Set(input.tags ?? [])],
      condition: checkCondition(input.condition),
      notify: this.#checkNotify(input.notify),
      enabled: input.enabled ?? true,
    };
  }

  #checkNotify(notify: AlertRuleInput['notify']): AlertNotify {
    const email = notify?.email?.length ? [...notify.email] : undefined;
    const webhook = notify?.webhook;
    if (webhook) {
      if (!/^https?:\/\//.test(webhook.url)) throw invalid('notify.webhook.url', 'notify.webhook.url is an http:// or https:// URL');
      if (!webhook.secret || webhook.secret.length < 16) throw invalid('notify.webhook.secret', 'notify.webhook.secret has at least 16 characters (it signs every call)');
      this.#checkUrl(webhook.url);
    }
    return { ...(email && { email }), ...(webhook && { webhook: { url: webhook.url, secret: webhook.secret } }) };
  }
}

function shown(rule: AlertRule): ShownRule {
  const { webhook, email } = rule.notify;
  return { ...rule, notify: { ...(email && { email }), ...(webhook && { webhook: { url: webhook.url, hasSecret: true as const } }) } };
}
