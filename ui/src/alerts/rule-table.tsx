import { ConfirmButton } from '../components/confirm-button';
import { href } from '../router/hash-location';
import { ALERT_RULES_PATH } from '../router/routes';
import { SeverityBadge } from './alert-badges';
import { alertsHref } from './alert-query';
import { AlertTags } from './alert-table';
import { conditionText, type AlertRule } from './alert-types';

export interface RuleTableProps {
  readonly rules: readonly AlertRule[];
  /** Trigger names by id, for the trigger-failures conditions. */
  readonly triggerNames: ReadonlyMap<string, string>;
  /** The rule whose form is open, marked in the table. */
  readonly editing: string;
  /** Deletes the rule (its alerts stay); a failure's message shows beside the confirmation. */
  readonly onDelete: (rule: AlertRule) => Promise<void>;
}

/** What a rule notifies: "2 e-mail addresses, webhook". */
function notifyText(rule: AlertRule): string {
  const parts: string[] = [];
  const emails = rule.notify.email?.length ?? 0;
  if (emails > 0) parts.push(emails === 1 ? (rule.notify.email?.[0] ?? '') : `${emails} e-mail addresses`);
  if (rule.notify.webhook !== undefined) parts.push('webhook');
  return parts.length === 0 ? 'nobody' : parts.join(', ');
}

/** One row per rule: name (to its form) with severity, "disabled" and tags; condition; whom it notifies; its alerts, Delete. */
export function RuleTable({ rules, triggerNames, editing, onDelete }: RuleTableProps) {
  return (
    <div className="table-scroll">
      <table className="table alt-rule-table" aria-label="Alert rules">
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Condition</th>
            <th scope="col">Notify</th>
            <th scope="col" className="alt-actions-head">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rules.map((rule) => (
            <tr key={rule.id} aria-current={rule.id === editing ? 'true' : undefined} className={rule.id === editing ? 'alt-editing' : undefined}>
              <td className="alt-name">
                <a href={href(ALERT_RULES_PATH, { edit: rule.id })} title="Edit this rule">
                  {rule.name}
                </a>
                <span className="alt-rule-marks">
                  <SeverityBadge severity={rule.severity} />
                  {rule.enabled ? null : <span className="alt-disabled">disabled</span>}
                </span>
                {rule.tags.length === 0 ? null : <AlertTags tags={rule.tags} />}
              </td>
              <td className="alt-condition">{conditionText(rule.condition, triggerNames)}</td>
              <td className="alt-notify">{notifyText(rule)}</td>
              <td>
                <span className="alt-rule-actions">
                  <a className="button button-quiet" href={alertsHref({ ruleId: rule.id, state: 'all' })} aria-label={`Alerts of ${rule.name}`}>
                    Alerts
                  </a>
                  <ConfirmButton label="Delete" name={`Delete ${rule.name}`} question={<>Delete “{rule.name}”? Its alerts stay.</>} busyLabel="Deleting…" onConfirm={() => onDelete(rule)} />
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
