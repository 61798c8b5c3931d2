import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { endpointsHref } from '../endpoints/endpoint-query';
import { href, navigate } from '../router/hash-location';
import { servicePath } from '../router/routes';
import { useSession } from '../session/session';
import { ServiceForm } from './service-form';
import { serviceTypeLabel } from './service-types';
import type { Service } from './use-services';
import './services.css';

/** `#/services/<id>`: one service to edit or delete; `#/services/new`: the form of a new one. */
export function ServicePage({ id }: { readonly id: string }) {
  return id === 'new' ? <NewServicePage /> : <EditServicePage id={id} />;
}

function Breadcrumb() {
  return (
    <p className="breadcrumb">
      <a href={href('/services')}>Services</a>
    </p>
  );
}

function NewServicePage() {
  usePageTitle('New service');
  const { api } = useSession();
  return (
    <section aria-labelledby="service-title" className="service-page">
      <Breadcrumb />
      <h1 id="service-title">New service</h1>
      <ServiceForm api={api} onSaved={(service) => navigate(href(servicePath(service.id)))} />
    </section>
  );
}

function EditServicePage({ id }: { readonly id: string }) {
  const { api } = useSession();
  const load = useCallback(async () => {
    const service = await call(api.GET('/services/{id}', { params: { path: { id } } }));
    const endpoints = await call(api.GET('/endpoint/count', { params: { query: { serviceId: id } } })).catch(() => undefined);
    return { service, endpoints: endpoints?.count };
  }, [api, id]);
  const { data, error, reload } = useResource(load);
  const [saved, setSaved] = useState<Service | undefined>(undefined);
  const [cascade, setCascade] = useState(false);

  const onSaved = (service: Service) => {
    setSaved(service);
    reload();
  };

  const remove = async () => {
    await call(api.DELETE('/services/{id}', { params: { path: { id }, query: cascade ? { cascade: true } : {} } }));
    navigate(href('/services'));
  };

  // What the last save answered, until a load brings something newer (another user's change).
  const current = data !== undefined && saved !== undefined && saved.id === data.service.id && saved.updatedAt >= data.service.updatedAt ? saved : data?.service;
  usePageTitle(current?.name ?? 'Service');

  return (
    <section aria-labelledby="service-title" className="service-page">
      <Breadcrumb />
      <h1 id="service-title">{current?.name ?? 'Service'}</h1>
      <ErrorMessage message={error} />
      {data === undefined || current === undefined ? (
        error === undefined ? <Loading what="the service" /> : null
      ) : (
        <>
          {saved === undefined ? null : (
            <p className="notice" role="status">
              Saved service “{saved.name}”.
            </p>
          )}
          <dl className="fields">
            <dt>Type</dt>
            <dd>{serviceTypeLabel(current.type)}</dd>
            <dt>Endpoints</dt>
            <dd>
              <a href={endpointsHref({ serviceId: current.id })}>{data.endpoints === undefined ? 'Endpoints of this service' : `${data.endpoints} endpoint${data.endpoints === 1 ? '' : 's'}`}</a>
            </dd>
            <dt>ID</dt>
            <dd className="mono">{current.id}</dd>
            <dt>Account</dt>
            <dd className="mono">{current.accountId}</dd>
            <dt>Created</dt>
            <dd>
              <DateTime value={current.createdAt} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <DateTime value={current.updatedAt} />
            </dd>
          </dl>
          {/* A new form after each save or reload: its fields start from the service as stored. The saved service is
              the PUT's answer, so the form is new at once: a reload landing later would wipe what was typed since. */}
          <ServiceForm key={current.updatedAt} api={api} service={current} onSaved={onSaved} />
          <details className="service-stored">
            <summary>Options as stored (defaults included)</summary>
            <pre className="card mono service-options">{JSON.stringify(current.options, null, 2)}</pre>
          </details>
          <div className="card service-delete">
            <h2>Delete the service</h2>
            {data.endpoints === 0 ? null : (
              <label className="admin-checkbox">
                <input type="checkbox" checked={cascade} onChange={(event) => setCascade(event.target.checked)} />
                Also delete its endpoints
              </label>
            )}
            <ConfirmButton
              label="Delete"
              name={`Delete service ${current.name}`}
              busyLabel="Deleting…"
              question={
                cascade
                  ? `Delete “${current.name}” and all its endpoints?`
                  : `Delete “${current.name}”?${data.endpoints === 0 ? '' : ' The API refuses while it has endpoints.'}`
              }
              onConfirm={remove}
            />
          </div>
        </>
      )}
    </section>
  );
}
