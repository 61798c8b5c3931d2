import { useCallback, type ReactNode } from 'react';
import { call } from '../api/client';
import { useResource, type Resource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { useSession } from '../session/session';
import { EventsCard, TriggersCard } from './diagnostics-activity';
import { DevicesCard, StorageCard } from './diagnostics-platform';

function Card<T>({ title, resource, children }: { readonly title: string; readonly resource: Resource<T>; readonly children: (data: T) => ReactNode }) {
  const id = `diag-${title.toLowerCase().replace(/\W+/g, '-')}`;
  return (
    <section className="card super-diag" aria-labelledby={id}>
      <h3 id={id}>{title}</h3>
      <ErrorMessage message={resource.error} />
      {resource.data === undefined ? (resource.error === undefined ? <Loading what={title.toLowerCase()} /> : null) : children(resource.data)}
    </section>
  );
}

/**
 * The platform's state for the operator: the event bus (`GET /super/events`), script workers and the slowest
 * scripts (`/super/triggers`), connected devices (`/super/devices`), table sizes (`/super/storage`). Each loads
 * on its own, so one slow or failing answer hides nothing else.
 */
export function DiagnosticsPanel() {
  const { api } = useSession();
  const events = useResource(useCallback(() => call(api.GET('/super/events')), [api]));
  const triggers = useResource(useCallback(() => call(api.GET('/super/triggers', { params: { query: { top: 10 } } })), [api]));
  const devices = useResource(useCallback(() => call(api.GET('/super/devices')), [api]));
  const storage = useResource(useCallback(() => call(api.GET('/super/storage')), [api]));
  const loading = events.loading || triggers.loading || devices.loading || storage.loading;

  return (
    <div className="super-diagnostics">
      <p className="super-diag-head">
        <span className="muted">As this node sees it now.</span>
        <button
          type="button"
          className="button button-quiet"
          disabled={loading}
          onClick={() => {
            for (const resource of [events, triggers, devices, storage]) resource.reload();
          }}
        >
          {loading ? 'Loading…' : 'Refresh'}
        </button>
      </p>
      <div className="super-diag-grid">
        <Card title="Events" resource={events}>
          {(view) => <EventsCard view={view} />}
        </Card>
        <Card title="Devices" resource={devices}>
          {(view) => <DevicesCard view={view} />}
        </Card>
        <Card title="Triggers" resource={triggers}>
          {(view) => <TriggersCard view={view} />}
        </Card>
        <Card title="Storage" resource={storage}>
          {(view) => <StorageCard view={view} />}
        </Card>
      </div>
    </div>
  );
}
