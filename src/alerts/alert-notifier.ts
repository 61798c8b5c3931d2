import { createHmac } from 'node:crypto';
import { createEvent, type Event } from '../events/event.js';
import type { HttpJson } from '../location/http-json.js';
import type { LogInput } from '../logs/model.js';
import type { Alert, AlertRule } from './model.js';

/** What changed: `opened`, `acknowledged`, `closed`. */
export type AlertTransition = 'opened' | 'acknowledged' | 'closed';

export interface AlertNotifierOptions {
  readonly http: HttpJson;
  /** Sends mail over the service's SMTP server; undefined when none is configured. */
  readonly mail: ((message: { to: string[]; subject: string; text: string }) => Promise<void>) | undefined;
  readonly publish: (event: Event) => Promise<void>;
  readonly timeoutMs: number;
  /** Told when a notification could not be delivered (logged by the service). */
  readonly onFailure: (what: string, error: unknown) => void;
  /** The account's log (`GET /log`, source `alert`): every change, and every notification not delivered. */
  readonly log: (entry: LogInput) => void;
}

/** The webhook's signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the rule's secret>`. */
export function signature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * Tells the world an alert changed: an `alert` event of the alert's endpoint (or account) for triggers, a
 * signed webhook call and e-mail as the rule says. Delivery is not awaited by the evaluation: a slow receiver
 * never holds the account's events; a failed one is reported to `onFailure` and not retried.
 */
export class AlertNotifier {
  readonly #options: AlertNotifierOptions;

  constructor(options: AlertNotifierOptions) {
    this.#options = options;
  }

  /** Publishes the `alert` event (durable before it returns), then sends the rule's notifications in the background. */
  async notify(alert: Alert, transition: AlertTransition, rule: AlertRule | undefined): Promise<void> {
    const payload = { transition, alert: { id: alert.id, name: alert.name, severity: alert.severity, tags: alert.tags, state: alert.state, ruleId: alert.ruleId, endpointId: alert.endpointId, endpointKey: alert.endpointKey, value: alert.value, occurrences: alert.occurrences, openedAt: alert.openedAt, closedAt: alert.closedAt } };
    await this.#options.publish(createEvent({ type: 'alert', accountId: alert.accountId, endpointId: alert.endpointId, endpointKey: alert.endpointKey, data: payload }));
    const level = transition === 'opened' && (alert.severity === 'critical' || alert.severity === 'major') ? 'error' : transition === 'opened' ? 'warn' : 'info';
    this.#log(alert, level, `${headline(alert)}: ${transition}`);
    if (!rule) return;
    const { webhook, email } = rule.notify;
    if (webhook) void this.#webhook(alert, webhook, payload, transition);
    if (email && email.length > 0) void this.#mail(email, alert, transition);
  }

  #log(alert: Alert, level: LogInput['level'], message: string): void {
    this.#options.log({
      accountId: alert.accountId,
      level,
      source: 'alert',
      message,
      endpointId: alert.endpointId,
      endpointKey: alert.endpointKey,
      data: { alertId: alert.id, ruleId: alert.ruleId, severity: alert.severity, state: alert.state },
    });
  }

  #failed(alert: Alert, what: string, error: unknown): void {
    this.#options.onFailure(what, error);
    this.#log(alert, 'warn', `${headline(alert)}: ${what} not delivered: ${error instanceof Error ? error.message : String(error)}`);
  }

  async #webhook(alert: Alert, webhook: { url: string; secret: string }, payload: object, transition: AlertTransition): Promise<void> {
    const body = JSON.stringify(payload);
    const timestamp = Math.floor(Date.now() / 1000);
    try {
      const answer = await this.#options.http({
        method: 'POST',
        url: webhook.url,
        json: payload,
        timeoutMs: this.#options.timeoutMs,
        headers: { 'x-iotbridge-event': `alert.${transition}`, 'x-iotbridge-signature': signature(webhook.secret, timestamp, body) },
      });
      if (answer.status < 200 || answer.status >= 300) this.#failed(alert, 'alert webhook', new Error(`answered ${answer.status}`));
    } catch (error) {
      this.#failed(alert, 'alert webhook', error);
    }
  }

  async #mail(to: string[], alert: Alert, transition: AlertTransition): Promise<void> {
    if (!this.#options.mail) return this.#failed(alert, 'alert e-mail', new Error('no SMTP server configured (IOTBRIDGE_SMTP_URL)'));
    const where = alert.endpointKey ? ` on ${alert.endpointKey}` : '';
    try {
      await this.#options.mail({
        to,
        subject: `[${alert.severity}] ${alert.name}${where}: ${transition}`,
        text: `Alert "${alert.name}"${where} is ${alert.state} (${alert.severity}).\nValue: ${JSON.stringify(alert.value)}\nOccurrences: ${alert.occurrences}\nOpened: ${alert.openedAt}${alert.closedAt ? `\nClosed: ${alert.closedAt}` : ''}\nTags: ${alert.tags.join(', ') || '—'}\nAlert id: ${alert.id}\n`,
      });
    } catch (error) {
      this.#failed(alert, 'alert e-mail', error);
    }
  }
}

/** `[major] fridge too warm on fridge-1`. */
function headline(alert: Alert): string {
  return `[${alert.severity}] ${alert.name}${alert.endpointKey ? ` on ${alert.endpointKey}` : ''}`;
}
