import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { splitTags } from '../files/file-api';
import { useSession } from '../session/session';
import type { Geofence, GeofenceWrite, PointPicker } from './location-types';

type Shape = 'circle' | 'geometry';

const GEOMETRY_EXAMPLE = '{"type": "Polygon", "coordinates": [[[13.37, 52.51], [13.38, 52.51], [13.38, 52.52], [13.37, 52.51]]]}';

export interface GeofenceFormProps {
  /** The geofence edited (`PUT /geofences/{id}`); undefined: a new one (`POST /geofences`). */
  readonly initial?: Geofence;
  /** A link back to the new-geofence form, while editing. */
  readonly cancelHref?: string;
  readonly picking: boolean;
  /** Asks the page for the next click on the map (undefined withdraws the request). */
  readonly requestPick: (fill: PointPicker | undefined) => void;
  readonly onSaved: (geofence: Geofence, created: boolean) => void;
}

/**
 * The geometry typed in: parsed here only as far as JSON (the page's message when it is not), a GeoJSON Feature
 * unwrapped to its geometry; every other check is the API's, and its message is shown.
 */
function readGeometry(text: string): GeofenceWrite['geometry'] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`The geometry is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const feature = parsed as { type?: unknown; geometry?: unknown } | null;
  if (feature !== null && typeof feature === 'object' && feature.type === 'Feature') parsed = feature.geometry;
  return parsed as GeofenceWrite['geometry'];
}

/** Name, tags, description and the shape: a circle (its centre typed or picked on the map) or a pasted GeoJSON geometry. */
export function GeofenceForm({ initial, cancelHref, picking, requestPick, onSaved }: GeofenceFormProps) {
  const id = useId();
  const { api } = useSession();
  const action = useAction();
  const [shape, setShape] = useState<Shape>(initial?.geometry === undefined ? 'circle' : 'geometry');
  const [lat, setLat] = useState(initial?.circle === undefined ? '' : String(initial.circle.lat));
  const [lon, setLon] = useState(initial?.circle === undefined ? '' : String(initial.circle.lon));

  const pick = () =>
    requestPick((pickedLat, pickedLon) => {
      setLat(pickedLat.toFixed(6));
      setLon(pickedLon.toFixed(6));
    });

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const description = formText(form, 'description').trim();
    let body: GeofenceWrite;
    try {
      body = {
        name: formText(form, 'name').trim(),
        description: description === '' ? null : description,
        tags: splitTags(formText(form, 'tags')),
        ...(shape === 'circle'
          ? { circle: { lat: Number(lat), lon: Number(lon), radius: Number(formText(form, 'radius')) } }
          : { geometry: readGeometry(formText(form, 'geometry')) }),
      };
    } catch (error) {
      action.setError(error instanceof Error ? error.message : String(error));
      return;
    }
    const saved = await action.run(() =>
      initial === undefined ? call(api.POST('/geofences', { body })) : call(api.PUT('/geofences/{id}', { params: { path: { id: initial.id } }, body })),
    );
    if (saved !== undefined) onSaved(saved, initial === undefined);
  };

  const title = initial === undefined ? 'New geofence' : `Edit “${initial.name}”`;
  return (
    <form className="card form loc-geofence-form" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <label htmlFor={`${id}-name`}>Name</label>
      {/* Editing starts from a link (a popup's, the list's): the form may be out of sight, so it takes the focus. */}
      <input id={`${id}-name`} name="name" required maxLength={200} defaultValue={initial?.name} autoFocus={initial !== undefined} />
      <label htmlFor={`${id}-tags`}>Tags (optional)</label>
      <input id={`${id}-tags`} name="tags" spellCheck={false} placeholder="site:berlin, depot" defaultValue={initial?.tags.join(', ')} aria-describedby={`${id}-tags-hint`} />
      <p id={`${id}-tags-hint`} className="muted field-hint">
        Separated by commas.
      </p>
      <label htmlFor={`${id}-description`}>Description (optional)</label>
      <input id={`${id}-description`} name="description" maxLength={2000} defaultValue={initial?.description ?? ''} />
      <fieldset className="loc-choice">
        <legend>Shape</legend>
        <label>
          <input type="radio" name="shape" value="circle" checked={shape === 'circle'} onChange={() => setShape('circle')} /> Circle
        </label>
        <label>
          <input type="radio" name="shape" value="geometry" checked={shape === 'geometry'} onChange={() => setShape('geometry')} /> GeoJSON polygon
        </label>
      </fieldset>
      {shape === 'circle' ? (
        <>
          <div className="loc-number-fields">
            <div className="field">
              <label htmlFor={`${id}-lat`}>Latitude</label>
              <input id={`${id}-lat`} type="number" step="any" min={-90} max={90} required value={lat} onChange={(event) => setLat(event.target.value)} />
            </div>
            <div className="field">
              <label htmlFor={`${id}-lon`}>Longitude</label>
              <input id={`${id}-lon`} type="number" step="any" min={-180} max={180} required value={lon} onChange={(event) => setLon(event.target.value)} />
            </div>
          </div>
          <button type="button" className="button button-quiet loc-pick" onClick={pick} disabled={picking}>
            {picking ? 'Click the map…' : 'Pick on map'}
          </button>
          <label htmlFor={`${id}-radius`}>Radius (m)</label>
          <input id={`${id}-radius`} name="radius" type="number" step="any" min={1} max={1000000} required defaultValue={initial?.circle?.radius} />
        </>
      ) : (
        <>
          <label htmlFor={`${id}-geometry`}>GeoJSON geometry</label>
          <textarea
            id={`${id}-geometry`}
            name="geometry"
            rows={6}
            required
            spellCheck={false}
            className="mono"
            placeholder={GEOMETRY_EXAMPLE}
            defaultValue={initial?.geometry === undefined ? '' : JSON.stringify(initial.geometry)}
            aria-describedby={`${id}-geometry-hint`}
          />
          <p id={`${id}-geometry-hint`} className="muted field-hint">
            A Polygon or MultiPolygon (or a Feature holding one), positions as [longitude, latitude], each ring closed.
          </p>
        </>
      )}
      <ErrorMessage message={action.error} />
      <div className="loc-button-row">
        <button type="submit" className="button" disabled={action.busy}>
          {action.busy ? 'Saving…' : initial === undefined ? 'Create geofence' : 'Save geofence'}
        </button>
        {cancelHref === undefined ? null : (
          <a className="button button-quiet" href={cancelHref}>
            Cancel
          </a>
        )}
      </div>
    </form>
  );
}
