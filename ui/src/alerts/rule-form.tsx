import { useId, useState, type FormEvent } from 'react';
import { messageOf } from '../api/client';
import { ErrorMessage } from '../components/error-message';
import { href } from '../router/hash-location';
import { ALERT_RULES_PATH } from '../router/routes';
import { useSession } from '../session/session';
import { SEVERITIES, type AlertRule, type Severity } from './alert-types';
import { ConditionFields, type TriggerChoice } from './condition-fields';
import { FieldBox, fieldId } from './field-box';
import { callForRule, RuleError, type RuleField } from './rule-errors';
import { bodyOf, draftOf, EMPTY_DRAFT, shownFields, type RuleDraft } from './rule-draft';

export interface RuleFormProps {
  /** The rule being edited; undefined: a new one. */
  readonly rule: AlertRule | undefined;
  readonly triggers: readonly TriggerChoice[] | undefined;
  readonly onSaved: (rule: AlertRule) => void;
}

interface Refusal {
  readonly field: RuleField | undefined;
  readonly message: string;
}

/**
 * Name, severity, tags, the condition (its fields change with its kind), whom to notify, enabled: `POST
 * /alert-rules` or `PUT /alert-rules/{id}`. What the API refuses shows next to the field it names.
 */
export function RuleForm({ rule, triggers, onSaved }: RuleFormProps) {
  const base = useId();
  const { api } = useSession();
  const [draft, setDraft] = useState<RuleDraft>(() => (rule === undefined ? EMPTY_DRAFT : draftOf(rule)));
  const [busy, setBusy] = useState(false);
  const [refusal, setRefusal] = useState<Refusal | undefined>(undefined);
  const change = (patch: Partial<RuleDraft>) => {
    setDraft((current) => ({ ...current, ...patch }));
    // Another kind shows other fields: a complaint about one of the old ones would have nowhere to show.
    if (patch.kind !== undefined) setRefusal(undefined);
  };
  const errorFor = (field: RuleField) => (refusal?.field === field ? refusal.message : undefined);
  const hasSecret = rule?.notify.webhook?.hasSecret === true;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    setRefusal(undefined);
    setBusy(true);
    const shown = shownFields(draft.kind);
    const body = bodyOf(draft);
    try {
      const saved =
        rule === undefined
          ? await callForRule(api.POST('/alert-rules', { body }), shown)
          : await callForRule(api.PUT('/alert-rules/{id}', { params: { path: { id: rule.id } }, body }), shown);
      onSaved(saved);
    } catch (failure) {
      const field = failure instanceof RuleError ? failure.field : undefined;
      setRefusal({ field, message: messageOf(failure) });
      // The field the API named gets the focus, its message read with it.
      if (field !== undefined) requestAnimationFrame(() => document.getElementById(fieldId(base, field))?.focus());
    } finally {
      setBusy(false);
    }
  };

  const title = rule === undefined ? 'New alert rule' : `Edit “${rule.name}”`;
  return (
    // noValidate: what the API refuses, it says why, next to the field.
    <form className="card form alt-rule-form" onSubmit={(event) => void save(event)} noValidate aria-labelledby={`${base}-title`}>
      <h2 id={`${base}-title`}>{title}</h2>
      <FieldBox base={base} field="name" label="Name" error={errorFor('name')}>
        {(control) => <input {...control} value={draft.name} onChange={(event) => change({ name: event.target.value })} maxLength={200} autoComplete="off" />}
      </FieldBox>
      <FieldBox base={base} field="severity" label="Severity" error={errorFor('severity')}>
        {(control) => (
          <select {...control} value={draft.severity} onChange={(event) => change({ severity: event.target.value as Severity })}>
            {SEVERITIES.map((severity) => (
              <option key={severity} value={severity}>
                {severity}
              </option>
            ))}
          </select>
        )}
      </FieldBox>
      <FieldBox base={base} field="tags" label="Tags (optional)" hint="Copied onto the rule’s alerts, to filter them; commas or spaces between them." error={errorFor('tags')}>
        {(control) => <input {...control} value={draft.tags} onChange={(event) => change({ tags: event.target.value })} placeholder="cold-chain site:hamburg" spellCheck={false} autoComplete="off" />}
      </FieldBox>
      <label className="alt-check">
        <input type="checkbox" checked={draft.enabled} onChange={(event) => change({ enabled: event.target.checked })} />
        Enabled
      </label>
      <ConditionFields base={base} draft={draft} change={change} errorFor={errorFor} triggers={triggers} />
      <fieldset className="alt-fieldset">
        <legend>Notify</legend>
        <FieldBox base={base} field="notify.email" label="E-mail addresses (optional)" hint="Mailed when an alert opens and closes; commas or spaces between them." error={errorFor('notify.email')}>
          {(control) => <input {...control} value={draft.emails} onChange={(event) => change({ emails: event.target.value })} placeholder="ops@example.com" spellCheck={false} autoComplete="off" />}
        </FieldBox>
        <FieldBox base={base} field="notify.webhook.url" label="Webhook URL (optional)" hint="POSTed the alert as JSON on every change. Empty (and no secret): no webhook." error={errorFor('notify.webhook.url')}>
          {(control) => <input {...control} type="url" value={draft.webhookUrl} onChange={(event) => change({ webhookUrl: event.target.value })} placeholder="https://hooks.example.com/iot" spellCheck={false} autoComplete="off" />}
        </FieldBox>
        <FieldBox
          base={base}
          field="notify.webhook.secret"
          label="Webhook secret"
          hint={hasSecret ? 'A secret is stored (it is never shown): leave this empty to keep it, or type a new one.' : 'At least 16 characters: signs every call (x-iotbridge-signature).'}
          error={errorFor('notify.webhook.secret')}
        >
          {(control) => <input {...control} type="password" value={draft.webhookSecret} onChange={(event) => change({ webhookSecret: event.target.value })} maxLength={500} autoComplete="new-password" />}
        </FieldBox>
      </fieldset>
      {refusal !== undefined && refusal.field === undefined ? <ErrorMessage message={refusal.message} /> : null}
      <div className="alt-form-buttons">
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Saving…' : rule === undefined ? 'Create rule' : 'Save rule'}
        </button>
        {rule === undefined ? null : (
          <a className="button button-quiet" href={href(ALERT_RULES_PATH)}>
            Cancel
          </a>
        )}
      </div>
    </form>
  );
}
