import { useId, useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { formText } from '../components/form-text';
import { href } from '../router/hash-location';
import { endpointPath } from '../router/routes';
import { useSession } from '../session/session';
import type { Evaluation, PointPicker } from './location-types';

export interface EvaluateFormProps {
  readonly picking: boolean;
  readonly requestPick: (fill: PointPicker | undefined) => void;
  /** The position became the endpoint's last known one: the map shows it. */
  readonly onEvaluated: () => void;
}

/**
 * `POST /geofences/eval`: an endpoint at a point, against every geofence of the account. The answer's
 * transitions (enter, exit) are also `geofence` events, as they would be from a script.
 */
export function EvaluateForm({ picking, requestPick, onEvaluated }: EvaluateFormProps) {
  const id = useId();
  const { api } = useSession();
  const action = useAction();
  const [lat, setLat] = useState('');
  const [lon, setLon] = useState('');
  const [result, setResult] = useState<Evaluation | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const body = { endpoint: formText(form, 'endpoint').trim(), lat: Number(lat), lon: Number(lon) };
    setResult(undefined);
    const answer = await action.run(() => call(api.POST('/geofences/eval', { body })));
    if (answer === undefined) return;
    setResult(answer);
    onEvaluated();
  };

  const pick = () =>
    requestPick((pickedLat, pickedLon) => {
      setLat(pickedLat.toFixed(6));
      setLon(pickedLon.toFixed(6));
    });

  return (
    <form className="card form loc-evaluate" onSubmit={(event) => void submit(event)} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Evaluate a position</h2>
      <label htmlFor={`${id}-endpoint`}>Endpoint</label>
      <input id={`${id}-endpoint`} name="endpoint" required spellCheck={false} placeholder="id or k.<key>" />
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
      <ErrorMessage message={action.error} />
      <button type="submit" className="button" disabled={action.busy}>
        {action.busy ? 'Evaluating…' : 'Evaluate'}
      </button>
      {result === undefined ? null : <EvaluationResult result={result} />}
    </form>
  );
}

function EvaluationResult({ result }: { readonly result: Evaluation }) {
  return (
    <div className="loc-evaluation" role="status">
      <p>
        <a href={href(endpointPath(result.endpointId))} className="mono">
          {result.endpointKey}
        </a>
        : {result.transitions.length === 0 ? 'no transition' : `${result.transitions.length} transition${result.transitions.length === 1 ? '' : 's'}`}
      </p>
      {result.transitions.length === 0 ? null : (
        <ul className="loc-transitions" aria-label="Transitions">
          {result.transitions.map((transition) => (
            <li key={`${transition.transition}-${transition.geofenceId}`}>
              <strong>{transition.transition}</strong> {transition.name}
              {transition.dwellSeconds === undefined ? null : <span className="muted"> (after {transition.dwellSeconds} s inside)</span>}
            </li>
          ))}
        </ul>
      )}
      <p className="muted">{result.inside.length === 0 ? 'Inside no geofence.' : `Inside ${result.inside.length} geofence${result.inside.length === 1 ? '' : 's'}.`}</p>
    </div>
  );
}
