import { useCallback, useEffect, useId, useState } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import type { StreamListener } from '../endpoints/use-event-stream';
import { InstanceTable } from './instance-table';
import { mergeValues, type KnownValue, type Lwm2mOperation, type OperationBody, type ValueRecord } from './lwm2m-types';
import { OperationOutcome, type OperationProps, type OperationState } from './resource-row';
import { useObjectDefinitions } from './use-object-definitions';
import './lwm2m.css';

/** How long an operation from the page waits for the device (ms). */
const OPERATION_TIMEOUT_MS = 10_000;

const VERBS: Record<Lwm2mOperation, string> = {
  read: 'Read',
  write: 'Written',
  exec: 'Executed',
  create: 'Created',
  delete: 'Deleted',
  discover: 'Discovered',
  writeAttributes: 'Attributes written',
  observe: 'Observing',
  cancelObserve: 'Observation cancelled',
  readComposite: 'Read',
  writeMulti: 'Written',
  observeComposite: 'Observing',
};

/** The values an `lwm2m-data` event carries (reads, observations, sends). */
function eventValues(data: unknown): { operation: string | undefined; values: ValueRecord[] } {
  const carried = data as { operation?: unknown; values?: unknown } | null;
  const values = Array.isArray(carried?.values) ? (carried.values as ValueRecord[]).filter((record) => typeof record?.path === 'string') : [];
  return { operation: typeof carried?.operation === 'string' ? carried.operation : undefined, values };
}

/**
 * An LwM2M device's objects as it announced them, named from the object registry, with the last-known value
 * of each resource and the operations its definition allows; values from reads, observations and the
 * endpoint's `lwm2m-data` events update as they come.
 */
export function Lwm2mObjectTree({ api, endpointId, subscribe }: { readonly api: ApiClient; readonly endpointId: string; readonly subscribe: (listener: StreamListener) => () => void }) {
  const id = useId();
  const load = useCallback(() => call(api.GET('/endpoints/{ref}/lwm2m/objects', { params: { path: { ref: endpointId } } })), [api, endpointId]);
  const device = useResource(load);
  const objectIds = device.data?.objects.map((object) => object.id) ?? [];
  const definitions = useObjectDefinitions(api, objectIds);
  // Values learnt since the page opened, newest last; they cover the stored last-known values.
  const [learnt, setLearnt] = useState<ReadonlyMap<string, KnownValue>>(new Map());
  const [results, setResults] = useState<ReadonlyMap<string, OperationState>>(new Map());
  // Observations started (token) or cancelled (null) from this page since the last load.
  const [observing, setObserving] = useState<ReadonlyMap<string, string | null>>(new Map());
  const { reload } = device;

  useEffect(
    () =>
      subscribe((event) => {
        if (event.type === 'lwm2m-data') {
          const { operation, values } = eventValues(event.data);
          setLearnt((current) => mergeValues(current, values, operation === 'observe' ? 'observe' : 'event'));
        } else if (event.type === 'on-connect' || event.type === 'on-disconnect') {
          // A new registration (or its end) changes the objects and ends the observations.
          setObserving(new Map());
          reload();
        }
      }),
    [subscribe, reload],
  );

  const setResult = (path: string, state: OperationState) => setResults((current) => new Map(current).set(path, state));
  const operate = (operation: Lwm2mOperation, body: OperationBody) => {
    const path = body.path ?? '/';
    setResult(path, { busy: true });
    call(api.POST('/endpoints/{ref}/lwm2m/{operation}', { params: { path: { ref: endpointId, operation } }, body: { timeout: OPERATION_TIMEOUT_MS, ...body } })).then(
      (result) => {
        if (!('code' in result)) {
          setResult(path, { busy: false, ok: 'Accepted: it waits for the device' });
          return;
        }
        setLearnt((current) => mergeValues(current, result.values ?? [], operation === 'observe' ? 'observe' : 'read'));
        if (operation === 'observe' && result.observing) setObserving((current) => new Map(current).set(path, result.token));
        if (operation === 'cancelObserve') setObserving((current) => new Map(current).set(path, null));
        const refused = operation === 'observe' && !result.observing;
        setResult(path, { busy: false, ok: refused ? `Read, but the device did not accept the observation (${result.code})` : `${VERBS[operation]} (${result.code})` });
      },
      (error: unknown) => setResult(path, { busy: false, error: messageOf(error) }),
    );
  };

  const data = device.data;
  const values = new Map<string, KnownValue>(data?.lastKnown.map((record) => [record.path, { value: record.value, type: record.type, time: record.time, source: 'last known' }]));
  for (const [path, known] of learnt) values.set(path, known);
  const observed = new Map<string, string>();
  for (const observation of data?.observations ?? []) observed.set(observation.path, observation.token);
  for (const [path, token] of observing) {
    if (token === null) observed.delete(path);
    else observed.set(path, token);
  }
  const operations: OperationProps = { operate, results, observed };
  const registration = data?.registration as { lwm2mVersion?: string; binding?: string; lifetime?: number; queueMode?: boolean; updatedAt?: string } | undefined;

  return (
    <section className="card panel lwm2m-panel" aria-labelledby={`${id}-title`}>
      <div className="lwm2m-heading">
        <h2 id={`${id}-title`}>LwM2M objects</h2>
        <button type="button" className="button button-quiet button-small" onClick={reload} disabled={device.loading}>
          Refresh
        </button>
      </div>
      <ErrorMessage message={device.error ?? definitions.error} />
      {data === undefined ? (
        device.error === undefined ? <Loading what="the objects" /> : null
      ) : (
        <>
          {data.registered && registration !== undefined ? (
            <p className="registration" data-testid="registration">
              Registered · LwM2M {registration.lwm2mVersion} · binding {registration.binding} · lifetime {registration.lifetime} s{registration.queueMode ? ' · queue mode (asleep between updates: operations wait for it)' : ''} · updated{' '}
              <DateTime value={registration.updatedAt} />
            </p>
          ) : (
            <p className="notice" role="status">
              The device is not registered (offline): operations wait for it or fail, as the API answers. Its last-known values are below.
            </p>
          )}
          {data.objects.map((object) => {
            const definition = definitions.data?.get(object.id);
            const name = definition?.name ?? object.name ?? `Object ${object.id}`;
            const objectPath = `/${object.id}`;
            return (
              <details key={object.id} className="lwm2m-object" open>
                <summary>
                  <h3>
                    {name} <span className="mono muted">{objectPath}</span>
                  </h3>
                </summary>
                <div className="object-actions">
                  <button type="button" className="button button-quiet button-small" disabled={results.get(objectPath)?.busy === true} onClick={() => operate('read', { path: objectPath })} aria-label={`Read ${name}`}>
                    Read object
                  </button>
                  <OperationOutcome state={results.get(objectPath)} />
                </div>
                {object.instances.length === 0 ? <p className="muted">No instance announced.</p> : null}
                {object.instances.map((instance) => (
                  <InstanceTable key={instance} objectId={object.id} instance={instance} objectName={name} definition={definition} values={values} operations={operations} />
                ))}
              </details>
            );
          })}
          {!data.registered && data.lastKnown.length > 0 ? <LastKnownTable values={data.lastKnown} /> : null}
        </>
      )}
    </section>
  );
}

function LastKnownTable({ values }: { readonly values: readonly ValueRecord[] }) {
  return (
    <div className="table-scroll">
      <table className="table table-compact" aria-label="Last-known values">
        <thead>
          <tr>
            <th scope="col">Path</th>
            <th scope="col">Value</th>
            <th scope="col">Time</th>
          </tr>
        </thead>
        <tbody>
          {values.map((record) => (
            <tr key={record.path}>
              <th scope="row" className="mono">
                {record.path}
              </th>
              <td className="mono">{typeof record.value === 'string' ? record.value : JSON.stringify(record.value)}</td>
              <td>
                <DateTime value={record.time} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
