import { useCallback } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { useSession } from '../session/session';
import { GeofenceForm, type GeofenceFormProps } from './geofence-form';

type EditorProps = Omit<GeofenceFormProps, 'initial'> & {
  /** The geofence to edit (`#/map?edit=<id>`); undefined: the form of a new one. */
  readonly editId: string | undefined;
};

/** The new-geofence form, or the form of the geofence the URL names once `GET /geofences/{id}` has answered. */
export function GeofenceEditor({ editId, ...form }: EditorProps) {
  if (editId === undefined) return <GeofenceForm {...form} cancelHref={undefined} />;
  return <EditedGeofence id={editId} {...form} />;
}

function EditedGeofence({ id, ...form }: Omit<GeofenceFormProps, 'initial'> & { readonly id: string }) {
  const { api } = useSession();
  const load = useCallback(() => call(api.GET('/geofences/{id}', { params: { path: { id } } })), [api, id]);
  const geofence = useResource(load);
  if (geofence.data === undefined) {
    return (
      <div className="card">
        <ErrorMessage message={geofence.error} />
        {geofence.error === undefined ? <Loading what="the geofence" /> : <a href={form.cancelHref}>New geofence</a>}
      </div>
    );
  }
  return <GeofenceForm initial={geofence.data} {...form} />;
}
