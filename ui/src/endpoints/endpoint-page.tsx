import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Lwm2mObjectTree } from '../lwm2m/object-tree';
import { useSession } from '../session/session';
import type { Service } from '../services/use-services';
import { EndpointCredentials } from './endpoint-credentials';
import { EndpointEvents } from './endpoint-events';
import { EndpointFields } from './endpoint-fields';
import { EndpointObjectEditor } from './endpoint-object-editor';
import { endpointsHref } from './endpoint-query';
import { EndpointStorage } from './endpoint-storage';
import type { Endpoint } from './endpoint-table';
import { EndpointTagsEditor } from './endpoint-tags-editor';
import { useEventStream } from './use-event-stream';
import './endpoints.css';

/**
 * One endpoint: its fields; tags, status details and parameters to edit; storage; credentials; its live
 * events; for an LwM2M device, the object tree with its operations.
 */
export function EndpointPage({ id }: { readonly id: string }) {
  const { api } = useSession();
  const load = useCallback(async () => {
    const endpoint = await call(api.GET('/endpoints/{ref}', { params: { path: { ref: id } } }));
    const service = await call(api.GET('/services/{id}', { params: { path: { id: endpoint.serviceId } } })).catch(() => undefined);
    return { endpoint, service };
  }, [api, id]);
  const { data, error } = useResource(load);
  // The endpoint as this page last changed it (a PATCH answers it whole).
  const [edited, setEdited] = useState<Endpoint | undefined>(undefined);
  const endpoint = edited ?? data?.endpoint;
  usePageTitle(endpoint?.key ?? 'Endpoint');

  return (
    <section aria-labelledby="endpoint-title">
      <p className="breadcrumb">
        <a href={endpointsHref({})}>Endpoints</a>
      </p>
      <h1 id="endpoint-title">
        <span className="mono">{endpoint?.key ?? 'Endpoint'}</span>
      </h1>
      <ErrorMessage message={error} />
      {data === undefined || endpoint === undefined ? (
        error === undefined ? <Loading what="the endpoint" /> : null
      ) : (
        <EndpointPanels endpoint={endpoint} service={data.service} onChanged={setEdited} />
      )}
    </section>
  );
}

function EndpointPanels({ endpoint, service, onChanged }: { readonly endpoint: Endpoint; readonly service: Service | undefined; readonly onChanged: (endpoint: Endpoint) => void }) {
  const { api, credentials } = useSession();
  // One stream for the page: the event list shows it, the object tree takes its values from it.
  const stream = useEventStream(credentials, endpoint.id);
  return (
    <>
      <EndpointFields endpoint={endpoint} service={service} />
      <div className="endpoint-panels">
        <EndpointTagsEditor api={api} endpoint={endpoint} onChanged={onChanged} />
        <EndpointObjectEditor api={api} endpoint={endpoint} field="statusDetails" caption="Status details" onChanged={onChanged} />
        <EndpointObjectEditor api={api} endpoint={endpoint} field="parameters" caption="Parameters" onChanged={onChanged} />
        {service?.type === 'lwm2m' ? <Lwm2mObjectTree api={api} endpointId={endpoint.id} subscribe={stream.subscribe} /> : null}
        <EndpointEvents stream={stream} />
        <EndpointStorage api={api} endpointId={endpoint.id} />
        <EndpointCredentials api={api} endpointId={endpoint.id} />
      </div>
    </>
  );
}
