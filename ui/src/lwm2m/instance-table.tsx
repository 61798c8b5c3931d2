import { useId, useState } from 'react';
import type { KnownValue, ObjectDefinition, ResourceDefinition } from './lwm2m-types';
import { pathParts } from './lwm2m-types';
import { OperationOutcome, ResourceRow, type OperationProps } from './resource-row';

/** A resource the registry does not define, known only by a value the device gave. */
function undefinedResource(id: number, known: KnownValue): ResourceDefinition {
  const type = (['string', 'integer', 'float', 'boolean', 'opaque', 'time', 'objlnk'] as const).find((name) => name === known.type) ?? 'string';
  return { id, name: `Resource ${id}`, operations: 'R', multiple: false, mandatory: false, type };
}

/**
 * One instance of an object: every resource its definition has (or, on request, only those with a value, the
 * mandatory and the executable ones) with their values and actions, plus reading and observing the instance.
 */
export function InstanceTable({
  objectId,
  instance,
  objectName,
  definition,
  values,
  operations,
}: {
  readonly objectId: number;
  readonly instance: number;
  readonly objectName: string;
  readonly definition: ObjectDefinition | undefined;
  readonly values: ReadonlyMap<string, KnownValue>;
  readonly operations: OperationProps;
}) {
  const id = useId();
  const [showAll, setShowAll] = useState(true);
  const base = `/${objectId}/${instance}`;
  const under = [...values].filter(([path]) => path.startsWith(`${base}/`));
  const valuesOf = (resourceId: number) => {
    const path = `${base}/${resourceId}`;
    return under.filter(([valuePath]) => valuePath === path || valuePath.startsWith(`${path}/`)).sort(([a], [b]) => (pathParts(a)[3] ?? 0) - (pathParts(b)[3] ?? 0));
  };
  const defined = definition?.resources ?? [];
  const known = new Set(under.map(([path]) => pathParts(path)[2]));
  const extra = [...known].filter((resourceId): resourceId is number => resourceId !== undefined && !defined.some((resource) => resource.id === resourceId));
  const all = [...defined, ...extra.map((resourceId) => undefinedResource(resourceId, valuesOf(resourceId)[0]?.[1] as KnownValue))].sort((a, b) => a.id - b.id);
  const shown = showAll ? all : all.filter((resource) => known.has(resource.id) || resource.mandatory || resource.operations === 'E');
  const { operate, results, observed } = operations;
  const instanceState = results.get(base);
  const busy = instanceState?.busy === true;

  return (
    <div className="lwm2m-instance">
      <div className="instance-heading">
        <h4 id={`${id}-title`}>
          {objectName} <span className="mono">{base}</span>
        </h4>
        <div className="action-buttons">
          <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('read', { path: base })} aria-label={`Read ${base}`}>
            Read instance
          </button>
          {observed.has(base) ? (
            <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('cancelObserve', { path: base })} aria-label={`Cancel observing ${base}`}>
              Cancel observe
            </button>
          ) : (
            <button type="button" className="button button-quiet button-small" disabled={busy} onClick={() => operate('observe', { path: base })} aria-label={`Observe ${base}`}>
              Observe instance
            </button>
          )}
          {all.length > shown.length || showAll ? (
            <button type="button" className="button button-quiet button-small" aria-expanded={showAll} onClick={() => setShowAll(!showAll)}>
              {showAll ? 'Fewer resources' : `All ${all.length} resources`}
            </button>
          ) : null}
        </div>
        <OperationOutcome state={instanceState} />
      </div>
      <div className="table-scroll">
        <table className="table table-compact resource-table" aria-labelledby={`${id}-title`}>
          <thead>
            <tr>
              <th scope="col">Resource</th>
              <th scope="col">Value</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((resource) => (
              <ResourceRow key={resource.id} path={`${base}/${resource.id}`} resource={resource} values={valuesOf(resource.id)} operations={operations} />
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
