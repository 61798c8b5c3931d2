import type { Logger } from 'pino';
import type { Alerts, Subject } from './alerts.js';
import type { AlertRule, AlertStore, StateCondition } from './model.js';

/** Endpoints one rule may hold open alerts for in one check: the longest silent first (docs/reports-alerts.md). */
export const WATCH_ENDPOINTS_MAX = 10_000;

export interface AlertWatchOptions {
  readonly store: AlertStore;
  readonly alerts: Alerts;
  /** Trigger runs of an account in [from, to] (epoch ms) and how many failed: `Metrics.executions`. */
  readonly executions: (accountId: string, range: { from: number; to: number; triggerId?: string | undefined }) => Promise<{ runs: number; failed: number }>;
  readonly intervalMs: number;
  readonly logger: Logger;
}

/**
 * Checks the rules whose condition is a state rather than an event (unavailable, no data, a trigger's failure
 * rate) every `intervalMs`: each check asks the store for what matches now (indexed queries, never every
 * endpoint) and lets Alerts open and close alerts to agree with it. One check at a time; a failing rule is
 * logged and the others go on.
 */
export class AlertWatch {
  readonly #options: AlertWatchOptions;
  #timer: NodeJS.Timeout | undefined;
  #check: Promise<void> | undefined;

  constructor(options: AlertWatchOptions) {
    this.#options = options;
  }

  start(): void {
    this.#timer ??= setInterval(() => {
      this.#check ??= this.check().finally(() => (this.#check = undefined));
    }, this.#options.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#check;
  }

  /** One pass over every account's enabled state rules. */
  async check(now = Date.now()): Promise<void> {
    let rules: AlertRule[];
    try {
      rules = (await this.#options.store.enabledRules()).filter((rule) => rule.condition.type !== 'threshold');
    } catch (error) {
      this.#options.logger.error({ err: error }, 'alert rules could not be read');
      return;
    }
    for (const rule of rules) {
      try {
        await this.#options.alerts.reconcile(rule, await this.#matching(rule, rule.condition as StateCondition, now));
      } catch (error) {
        this.#options.logger.error({ err: error, ruleId: rule.id, accountId: rule.accountId }, 'alert rule check failed');
      }
    }
  }

  async #matching(rule: AlertRule, condition: StateCondition, now: number): Promise<Subject[]> {
    const since = now - condition.minutes * 60_000;
    if (condition.type === 'trigger-failures') {
      const { runs, failed } = await this.#options.executions(rule.accountId, { from: since, to: now, triggerId: condition.triggerId });
      const percent = runs === 0 ? 0 : (failed / runs) * 100;
      if (runs < condition.minRuns || percent < condition.percent) return [];
      return [{ endpointId: null, endpointKey: null, value: { runs, failed, percent: Math.round(percent * 10) / 10, ...(condition.triggerId && { triggerId: condition.triggerId }) } }];
    }
    const silent = await this.#options.store.silentEndpoints(rule.accountId, {
      tags: condition.tags ?? [],
      before: since,
      unavailableOnly: condition.type === 'unavailable',
      limit: WATCH_ENDPOINTS_MAX,
    });
    return silent.map((endpoint) => ({ endpointId: endpoint.id, endpointKey: endpoint.key, value: { lastSeenAt: endpoint.lastSeenAt } }));
  }
}
