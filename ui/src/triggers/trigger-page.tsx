import { useCallback, useMemo } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href, navigate, useHashLocation } from '../router/hash-location';
import { EXECUTIONS_PATH, triggerPath } from '../router/routes';
import { useSession } from '../session/session';
import { draftOf, EMPTY_DRAFT } from './trigger-draft';
import { TriggerForm } from './trigger-form';
import type { Trigger } from './trigger-types';
import './triggers.css';

/** The editor of one trigger (`new`: a trigger not saved yet): GET /triggers/{id}, GET /triggers/namespaces. */
export function TriggerPage({ id }: { readonly id: string }) {
  const { api } = useSession();
  const isNew = id === 'new';
  const saved = useHashLocation().query.get('saved') !== null;
  const loadTrigger = useCallback(() => (isNew ? Promise.resolve(undefined) : call(api.GET('/triggers/{id}', { params: { path: { id } } }))), [api, id, isNew]);
  const trigger = useResource(loadTrigger);
  const loadNamespaces = useCallback(() => call(api.GET('/triggers/namespaces')), [api]);
  const namespaces = useResource(loadNamespaces);
  const namespaceList = useMemo(() => namespaces.data?.items ?? [], [namespaces.data]);
  const initial = useMemo(() => (trigger.data === undefined ? EMPTY_DRAFT : draftOf(trigger.data)), [trigger.data]);
  const name = trigger.data?.name;
  usePageTitle(isNew ? 'New trigger' : (name ?? 'Trigger'));
  const { reload } = trigger;

  const onSaved = (savedTrigger: Trigger) => {
    if (isNew) navigate(href(triggerPath(savedTrigger.id), { saved: 1 }));
    else {
      navigate(href(triggerPath(savedTrigger.id), { saved: savedTrigger.version }));
      reload();
    }
  };

  const ready = isNew || trigger.data !== undefined;
  return (
    <section aria-labelledby="trigger-title">
      <p className="breadcrumb">
        <a href={href('/triggers')}>Triggers</a>
        {isNew ? null : (
          <>
            {' · '}
            <a href={href(EXECUTIONS_PATH, { triggerId: id })}>Its executions</a>
          </>
        )}
      </p>
      <h1 id="trigger-title">{isNew ? 'New trigger' : (name ?? 'Trigger')}</h1>
      {saved && trigger.data !== undefined ? (
        <p className="notice" role="status">
          Saved “{trigger.data.name}” (version {trigger.data.version}).
        </p>
      ) : null}
      <ErrorMessage message={trigger.error ?? namespaces.error} />
      {!ready ? (
        trigger.error === undefined ? <Loading what="the trigger" /> : null
      ) : (
        // A saved version starts the form afresh.
        <TriggerForm key={trigger.data?.version ?? 0} api={api} trigger={trigger.data} initial={initial} namespaces={namespaceList} onSaved={onSaved} />
      )}
    </section>
  );
}
