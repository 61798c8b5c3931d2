import { useCallback, useMemo, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href, navigate } from '../router/hash-location';
import { ALERT_RULES_PATH } from '../router/routes';
import { useSession } from '../session/session';
import { AlertTabs } from './alert-tabs';
import type { AlertRule } from './alert-types';
import type { TriggerChoice } from './condition-fields';
import { RuleForm } from './rule-form';
import { RuleTable } from './rule-table';
import './alerts.css';

/** Triggers offered for a "Trigger failures" condition (libraries run on no event, so they are left out). */
const TRIGGERS_LISTED = 1000;

/**
 * `#/alerts/rules`: the account's alert rules (`GET /alert-rules`) and the form of a new one, or of the one in
 * `?edit=<id>` (`PUT`); Delete after a confirmation (its alerts stay).
 */
export function AlertRulesPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Alert rules');
  const { api } = useSession();
  const editId = search.get('edit') ?? '';
  const loadRules = useCallback(() => call(api.GET('/alert-rules')), [api]);
  const rules = useResource(loadRules);
  const loadTriggers = useCallback(() => call(api.GET('/triggers', { params: { query: { limit: TRIGGERS_LISTED } } })), [api]);
  const triggers = useResource(loadTriggers);
  const triggerChoices = useMemo<TriggerChoice[] | undefined>(
    () => triggers.data?.items.filter((trigger) => !trigger.library).map((trigger) => ({ id: trigger.id, name: trigger.name })),
    [triggers.data],
  );
  const triggerNames = useMemo(() => new Map((triggers.data?.items ?? []).map((trigger) => [trigger.id, trigger.name])), [triggers.data]);
  // What the last change did, shown while the form it leads to is open (not once another rule is opened for editing).
  const [notice, setNotice] = useState<{ readonly text: string; readonly editId: string } | undefined>(undefined);
  // A new form after each save: a created rule's fields do not stay in the form of the next one.
  const [forms, setForms] = useState(0);
  const { reload } = rules;

  const list = rules.data?.items;
  const editing = editId === '' ? undefined : list?.find((rule) => rule.id === editId);

  const remove = async (rule: AlertRule) => {
    await call(api.DELETE('/alert-rules/{id}', { params: { path: { id: rule.id } } }));
    const next = rule.id === editId ? '' : editId;
    setNotice({ text: `Deleted “${rule.name}”; its alerts stay.`, editId: next });
    if (next !== editId) navigate(href(ALERT_RULES_PATH));
    reload();
  };

  const saved = (rule: AlertRule) => {
    setNotice({ text: `${editId === '' ? 'Created' : 'Saved'} “${rule.name}”.`, editId: '' });
    setForms((count) => count + 1);
    if (editId !== '') navigate(href(ALERT_RULES_PATH));
    reload();
  };

  return (
    <section aria-labelledby="rules-title">
      <h1 id="rules-title">Alert rules</h1>
      <AlertTabs current="rules" />
      <p className="muted">A rule opens an alert when its condition holds, and notifies by e-mail and webhook.</p>
      {notice === undefined || notice.editId !== editId ? null : (
        <p className="notice" role="status">
          {notice.text}
        </p>
      )}
      <div className="split alt-split">
        <div className="split-main">
          <ErrorMessage message={rules.error} />
          {list === undefined ? (
            rules.error === undefined ? <Loading what="alert rules" /> : null
          ) : list.length === 0 ? (
            <NoRules />
          ) : (
            <div aria-busy={rules.loading}>
              <RuleTable rules={list} triggerNames={triggerNames} editing={editId} onDelete={remove} />
            </div>
          )}
        </div>
        <div className="split-side">
          {editId !== '' && list !== undefined && editing === undefined ? (
            <p className="error-message" role="alert">
              No such alert rule: it was deleted, or belongs to another account. <a href={href(ALERT_RULES_PATH)}>New rule</a>
            </p>
          ) : editId !== '' && editing === undefined ? null : (
            <RuleForm key={`${editing?.id ?? 'new'}-${editing?.updatedAt ?? ''}-${forms}`} rule={editing} triggers={triggerChoices} onSaved={saved} />
          )}
        </div>
      </div>
    </section>
  );
}

/** What an account without rules sees: what a rule is, and where to make one. */
function NoRules() {
  return (
    <div className="card alt-empty">
      <p>No alert rules yet: create one with the form.</p>
      <p className="muted">
        For example a threshold: events of type <span className="mono">reading</span> whose <span className="mono">data.temperature</span> is
        <span className="mono"> &gt; 8</span> open an alert for their endpoint, closed again by the next reading at 8 or below.
      </p>
    </div>
  );
}
