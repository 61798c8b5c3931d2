import { CONDITION_KINDS, THRESHOLD_OPS, type ConditionType, type ThresholdCondition } from './alert-types';
import { FieldBox } from './field-box';
import type { RuleField } from './rule-errors';
import type { RuleDraft } from './rule-draft';

export interface TriggerChoice {
  readonly id: string;
  readonly name: string;
}

export interface ConditionFieldsProps {
  readonly base: string;
  readonly draft: RuleDraft;
  readonly change: (patch: Partial<RuleDraft>) => void;
  readonly errorFor: (field: RuleField) => string | undefined;
  /** The account's triggers for "Trigger failures" (undefined while they load). */
  readonly triggers: readonly TriggerChoice[] | undefined;
}

/** The condition's kind and the fields of that kind: each kind shows only its own. */
export function ConditionFields({ base, draft, change, errorFor, triggers }: ConditionFieldsProps) {
  const kind = CONDITION_KINDS.find((entry) => entry.type === draft.kind);
  return (
    <fieldset className="alt-fieldset">
      <legend>Condition</legend>
      <FieldBox base={base} field="condition.type" label="Kind" hint={kind?.hint} error={errorFor('condition.type')}>
        {(control) => (
          <select {...control} value={draft.kind} onChange={(event) => change({ kind: event.target.value as ConditionType })}>
            {CONDITION_KINDS.map((entry) => (
              <option key={entry.type} value={entry.type}>
                {entry.label}
              </option>
            ))}
          </select>
        )}
      </FieldBox>
      {draft.kind === 'threshold' ? <ThresholdFields base={base} draft={draft} change={change} errorFor={errorFor} /> : <MinutesField base={base} draft={draft} change={change} errorFor={errorFor} />}
      {draft.kind === 'unavailable' || draft.kind === 'no-data' ? (
        <FieldBox
          base={base}
          field="condition.tags"
          label={draft.kind === 'no-data' ? 'Endpoint tags' : 'Endpoint tags (optional)'}
          hint={draft.kind === 'no-data' ? 'At least one; endpoints with all of them are watched.' : 'Empty: every endpoint of the account; else those with all of them.'}
          error={errorFor('condition.tags')}
        >
          {(control) => <input {...control} value={draft.conditionTags} onChange={(event) => change({ conditionTags: event.target.value })} placeholder="site:hamburg" spellCheck={false} />}
        </FieldBox>
      ) : null}
      {draft.kind === 'trigger-failures' ? <TriggerFailureFields base={base} draft={draft} change={change} errorFor={errorFor} triggers={triggers} /> : null}
    </fieldset>
  );
}

type KindFieldsProps = Omit<ConditionFieldsProps, 'triggers'>;

function ThresholdFields({ base, draft, change, errorFor }: KindFieldsProps) {
  return (
    <>
      <FieldBox base={base} field="condition.event" label="Event type" hint="The events the rule watches." error={errorFor('condition.event')}>
        {(control) => <input {...control} value={draft.event} onChange={(event) => change({ event: event.target.value })} placeholder="reading" maxLength={100} spellCheck={false} autoComplete="off" />}
      </FieldBox>
      <FieldBox base={base} field="condition.field" label="Field" hint="A dotted path into the event: data.temperature, endpointKey." error={errorFor('condition.field')}>
        {(control) => <input {...control} value={draft.field} onChange={(event) => change({ field: event.target.value })} maxLength={200} spellCheck={false} autoComplete="off" />}
      </FieldBox>
      <FieldBox base={base} field="condition.op" label="Operator" error={errorFor('condition.op')}>
        {(control) => (
          <select {...control} className="alt-op" value={draft.op} onChange={(event) => change({ op: event.target.value as ThresholdCondition['op'] })}>
            {THRESHOLD_OPS.map((op) => (
              <option key={op} value={op}>
                {op}
              </option>
            ))}
          </select>
        )}
      </FieldBox>
      <FieldBox base={base} field="condition.value" label="Value" hint={'A number, true / false, or text ("8" in quotes is text). Only == and != compare text and true / false.'} error={errorFor('condition.value')}>
        {(control) => <input {...control} value={draft.value} onChange={(event) => change({ value: event.target.value })} placeholder="8" spellCheck={false} autoComplete="off" />}
      </FieldBox>
    </>
  );
}

function MinutesField({ base, draft, change, errorFor }: KindFieldsProps) {
  return (
    <FieldBox base={base} field="condition.minutes" label="Minutes" hint="From 0.1 to 10080 (a week). Checked every few seconds." error={errorFor('condition.minutes')}>
      {(control) => <input {...control} type="number" inputMode="decimal" min={0.1} max={10080} step="any" value={draft.minutes} onChange={(event) => change({ minutes: event.target.value })} />}
    </FieldBox>
  );
}

function TriggerFailureFields({ base, draft, change, errorFor, triggers }: ConditionFieldsProps) {
  return (
    <>
      <FieldBox base={base} field="condition.percent" label="Failed runs (%)" hint="The alert opens when at least this share of the runs in the period failed." error={errorFor('condition.percent')}>
        {(control) => <input {...control} type="number" inputMode="decimal" min={0} max={100} step="any" value={draft.percent} onChange={(event) => change({ percent: event.target.value })} />}
      </FieldBox>
      <FieldBox base={base} field="condition.minRuns" label="Runs at least (optional)" hint="Fewer runs in the period never open the alert. Empty: 1." error={errorFor('condition.minRuns')}>
        {(control) => <input {...control} type="number" inputMode="numeric" min={1} step={1} placeholder="1" value={draft.minRuns} onChange={(event) => change({ minRuns: event.target.value })} />}
      </FieldBox>
      <FieldBox base={base} field="condition.triggerId" label="Trigger" error={errorFor('condition.triggerId')}>
        {(control) => (
          <select {...control} value={draft.triggerId} onChange={(event) => change({ triggerId: event.target.value })}>
            <option value="">All the account’s triggers</option>
            {/* A trigger deleted or not listed keeps its id choosable. */}
            {draft.triggerId !== '' && !(triggers ?? []).some((trigger) => trigger.id === draft.triggerId) ? <option value={draft.triggerId}>{draft.triggerId}</option> : null}
            {(triggers ?? []).map((trigger) => (
              <option key={trigger.id} value={trigger.id}>
                {trigger.name}
              </option>
            ))}
          </select>
        )}
      </FieldBox>
    </>
  );
}
