import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { useSession } from '../session/session';
import { ImportForm } from './import-form';
import { LocationServiceForm } from './location-service-form';
import { LocationServiceTable } from './location-service-table';
import type { LocationService } from './location-types';
import './location.css';

/**
 * `#/location`: the account's location services in fallback order (each embedded one with its imported
 * positions, `GET /location/services/{id}`), their order, deletion, the CSV import of an embedded one, and the
 * form of a new service.
 */
export function LocationServicesPage() {
  usePageTitle('Location services');
  const { api } = useSession();
  const load = useCallback(async (): Promise<LocationService[]> => {
    const { items } = await call(api.GET('/location/services'));
    // The list leaves out what an embedded service holds: each one's own answer has it.
    return Promise.all(
      items.map(async (service) => (service.type === 'embedded' ? call(api.GET('/location/services/{id}', { params: { path: { id: service.id } } })) : service)),
    );
  }, [api]);
  const services = useResource(load);
  const [created, setCreated] = useState<string | undefined>(undefined);
  const reorder = useAction();
  const { reload } = services;

  /** Moves a service one place up or down: every service whose place changes gets its new position (0, 1, 2…). */
  const move = async (list: readonly LocationService[], index: number, by: -1 | 1) => {
    const order = [...list];
    const [moved] = order.splice(index, 1);
    if (moved === undefined) return;
    order.splice(index + by, 0, moved);
    await reorder.run(async () => {
      for (const [position, service] of order.entries()) {
        if (service.position !== position) await call(api.PATCH('/location/services/{id}', { params: { path: { id: service.id } }, body: { position } }));
      }
    });
    reload();
  };

  const remove = async (service: LocationService) => {
    await call(api.DELETE('/location/services/{id}', { params: { path: { id: service.id } } }));
    reload();
  };

  const list = services.data;
  const embedded = list?.filter((service) => service.type === 'embedded') ?? [];
  return (
    <section aria-labelledby="location-title">
      <h1 id="location-title">Location services</h1>
      <p className="muted">
        Geolocation tries them in this order until one answers (cell towers and Wi-Fi from the embedded databases, or an HTTP provider); geocoding uses the
        Nominatim ones, then the embedded GeoNames places.
      </p>
      <div className="split">
        <div className="split-main">
          <ErrorMessage message={services.error} />
          <ErrorMessage message={reorder.error} />
          {list === undefined ? (
            services.error === undefined ? <Loading what="location services" /> : null
          ) : list.length === 0 ? (
            <p className="muted">No location services yet: geocoding uses the embedded places alone.</p>
          ) : (
            <div aria-busy={services.loading || reorder.busy}>
              <LocationServiceTable services={list} busy={reorder.busy} onMove={(index, by) => void move(list, index, by)} onDelete={remove} />
            </div>
          )}
          {embedded.map((service) => (
            <ImportForm key={service.id} service={service} onImported={reload} />
          ))}
        </div>
        <div className="split-side">
          {created === undefined ? null : (
            <p className="notice" role="status">
              {created}
            </p>
          )}
          <LocationServiceForm
            onCreated={(service) => {
              setCreated(`Created “${service.name}”.`);
              reload();
            }}
          />
        </div>
      </div>
    </section>
  );
}
