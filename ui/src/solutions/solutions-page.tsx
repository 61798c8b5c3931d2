import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href, type QueryValues } from '../router/hash-location';
import { SOLUTIONS_PATH } from '../router/routes';
import { useSession } from '../session/session';
import { offsetParam } from '../users/use-paged';
import { HistoryTable } from './history-table';
import { UninstallResultView } from './install-result';
import { InstallationTable, type InstalledRow } from './installation-table';
import { newerTemplate, type UninstallResult } from './solutions-api';
import { TemplateTable } from './template-table';
import { UploadForm } from './upload-form';
import './solutions.css';

const PAGE_SIZE = 25;
const INSTALLATIONS_MAX = 100;

/**
 * `#/solutions`: the templates the account sees (its own and inherited), adding one, the installations with
 * Upgrade and Uninstall, and the history of installs. `?offset=` pages the catalogue, `?historyOffset=` the history.
 */
export function SolutionsPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Solutions');
  const { api } = useSession();
  const offset = offsetParam(search, 'offset');
  const historyOffset = offsetParam(search, 'historyOffset');
  const pageHref = (values: QueryValues) => href(SOLUTIONS_PATH, { offset: offset || undefined, historyOffset: historyOffset || undefined, ...values });

  const loadTemplates = useCallback(() => call(api.GET('/solutions/templates', { params: { query: { limit: PAGE_SIZE, offset } } })), [api, offset]);
  const templates = useResource(loadTemplates);
  const loadInstalled = useCallback(async (): Promise<InstalledRow[]> => {
    const { items } = await call(api.GET('/solutions/installations', { params: { query: { limit: INSTALLATIONS_MAX } } }));
    return Promise.all(items.map(async (installation) => ({ installation, newer: await newerTemplate(api, installation.template, installation.version) })));
  }, [api]);
  const installed = useResource(loadInstalled);
  const loadHistory = useCallback(() => call(api.GET('/solutions/history', { params: { query: { limit: PAGE_SIZE, offset: historyOffset } } })), [api, historyOffset]);
  const history = useResource(loadHistory);
  const [uninstalled, setUninstalled] = useState<{ result: UninstallResult; template: string } | undefined>(undefined);

  return (
    <section aria-labelledby="solutions-title">
      <h1 id="solutions-title">Solutions</h1>
      <div className="split">
        <div className="split-main sol-main">
          <h2>Templates</h2>
          <p className="muted">Ready-made sets of services, triggers, endpoints, reports and alert rules: this account&apos;s own and those of the accounts above it.</p>
          <ErrorMessage message={templates.error} />
          {templates.data === undefined ? (
            templates.error === undefined ? <Loading what="templates" /> : null
          ) : (
            <>
              <Pager total={templates.data.total} offset={templates.data.offset} limit={PAGE_SIZE} noun="templates" hrefAt={(at) => pageHref({ offset: at || undefined })} />
              {templates.data.items.length === 0 ? <p className="muted">No templates yet: add one.</p> : <TemplateTable templates={templates.data.items} />}
            </>
          )}

          <h2>Installed</h2>
          {uninstalled === undefined ? null : <UninstallResultView result={uninstalled.result} template={uninstalled.template} />}
          <ErrorMessage message={installed.error} />
          {installed.data === undefined ? (
            installed.error === undefined ? <Loading what="installations" /> : null
          ) : installed.data.length === 0 ? (
            <p className="muted">Nothing is installed in this account.</p>
          ) : (
            <InstallationTable
              rows={installed.data}
              onUninstalled={(result, installation) => {
                setUninstalled({ result, template: `${installation.template} ${installation.version}` });
                installed.reload();
                history.reload();
              }}
            />
          )}

          <h2>History</h2>
          <ErrorMessage message={history.error} />
          {history.data === undefined ? (
            history.error === undefined ? <Loading what="history" /> : null
          ) : (
            <>
              <Pager total={history.data.total} offset={history.data.offset} limit={PAGE_SIZE} noun="entries" hrefAt={(at) => pageHref({ historyOffset: at || undefined })} />
              {history.data.items.length === 0 ? <p className="muted">No installs yet.</p> : <HistoryTable entries={history.data.items} />}
            </>
          )}
        </div>
        <div className="split-side">
          <UploadForm
            onUploaded={() => {
              templates.reload();
              installed.reload();
            }}
          />
        </div>
      </div>
    </section>
  );
}
