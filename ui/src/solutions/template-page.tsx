import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { href, navigate } from '../router/hash-location';
import { SOLUTIONS_PATH } from '../router/routes';
import { useSession } from '../session/session';
import { InstallForm } from './install-form';
import { InstallResultView } from './install-result';
import type { InstallResult, Template } from './solutions-api';
import './solutions.css';

/** The document's sections with their item counts: "2 services, 1 trigger". */
function contentsOf(template: Template): string {
  const parts = Object.entries(template.document)
    .filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]) && entry[1].length > 0)
    .map(([section, items]) => `${items.length} ${items.length === 1 ? section.replace(/s$/, '') : section}`);
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

/**
 * `#/solutions/<id>`: one template (GET /solutions/templates/{id}), its parameters as a form and Install;
 * `?upgrade=<installation id>` fills the form with that installation's values and upgrades it.
 */
export function TemplatePage({ id, search }: { readonly id: string; readonly search: URLSearchParams }) {
  const { api } = useSession();
  const upgradeId = search.get('upgrade') ?? undefined;
  const load = useCallback(async () => {
    const template = await call(api.GET('/solutions/templates/{id}', { params: { path: { id } } }));
    const upgrading = upgradeId === undefined ? undefined : await call(api.GET('/solutions/installations/{id}', { params: { path: { id: upgradeId } } }));
    return { template, upgrading };
  }, [api, id, upgradeId]);
  const loaded = useResource(load);
  const [result, setResult] = useState<InstallResult | undefined>(undefined);
  const template = loaded.data?.template;
  usePageTitle(template === undefined ? 'Template' : `${template.name} ${template.version}`);

  return (
    <section aria-labelledby="template-title">
      <p className="breadcrumb">
        <a href={href(SOLUTIONS_PATH)}>Solutions</a>
      </p>
      <h1 id="template-title">{template === undefined ? 'Template' : `${template.name} ${template.version}`}</h1>
      <ErrorMessage message={loaded.error} />
      {loaded.data === undefined || template === undefined ? (
        loaded.error === undefined ? <Loading what="the template" /> : null
      ) : (
        <div className="split">
          <div className="split-main sol-main">
            <dl className="fields">
              <dt>Description</dt>
              <dd>{template.description === '' ? <span className="muted">none</span> : template.description}</dd>
              <dt>Origin</dt>
              <dd>{template.inherited ? `inherited from account ${template.accountId}` : 'this account'}</dd>
              <dt>Contents</dt>
              <dd>{contentsOf(template)}</dd>
              <dt>Added</dt>
              <dd>
                <DateTime value={template.createdAt} /> by {template.createdBy}
              </dd>
            </dl>
            {result === undefined ? null : <InstallResultView result={result} />}
            {template.inherited ? null : (
              <p>
                <ConfirmButton
                  label="Delete template"
                  busyLabel="Deleting…"
                  question={`Delete ${template.name} ${template.version}? Its installations stay.`}
                  onConfirm={async () => {
                    await call(api.DELETE('/solutions/templates/{id}', { params: { path: { id: template.id } } }));
                    navigate(href(SOLUTIONS_PATH));
                  }}
                />
              </p>
            )}
          </div>
          <div className="split-side">
            <InstallForm key={template.id} template={template} upgrading={loaded.data.upgrading} onDone={setResult} />
          </div>
        </div>
      )}
    </section>
  );
}
