import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { href } from '../router/hash-location';
import { servicePath } from '../router/routes';
import { useSession } from '../session/session';
import { ServiceForm } from './service-form';
import { ServiceTable } from './service-table';
import type { Service } from './use-services';
import './services.css';

const SERVICES_PAGE_SIZE = 25;

/** The services of the acting account, a page at a time, and a form to create one. */
export function ServicesPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Services');
  const { api } = useSession();
  const requested = Number(search.get('offset') ?? 0);
  const offset = Number.isInteger(requested) && requested > 0 ? requested : 0;
  const load = useCallback(() => call(api.GET('/services', { params: { query: { limit: SERVICES_PAGE_SIZE, offset } } })), [api, offset]);
  const services = useResource(load);
  const [created, setCreated] = useState<Service | undefined>(undefined);
  const { reload } = services;

  const onCreated = (service: Service) => {
    setCreated(service);
    reload();
  };

  return (
    <section aria-labelledby="services-title">
      <h1 id="services-title">Services</h1>
      <div className="split">
        <div className="split-main">
          <ErrorMessage message={services.error} />
          {created === undefined ? null : (
            <p className="notice" role="status">
              Created service “{created.name}” ({created.id}): <a href={href(servicePath(created.id))}>open it</a>.
            </p>
          )}
          {services.data === undefined ? (
            services.error === undefined ? <Loading what="services" /> : null
          ) : (
            <>
              <Pager total={services.data.total} offset={services.data.offset} limit={SERVICES_PAGE_SIZE} noun="services" hrefAt={(at) => href('/services', { offset: at === 0 ? undefined : at })} />
              {services.data.items.length === 0 ? <p className="muted">No services yet: create one to add endpoints to it.</p> : <ServiceTable services={services.data.items} />}
            </>
          )}
        </div>
        <div className="split-side">
          <ServiceForm api={api} onSaved={onCreated} />
        </div>
      </div>
    </section>
  );
}
