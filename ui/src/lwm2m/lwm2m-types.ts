import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

/** What the device announced and what is known of it (`GET /endpoints/{ref}/lwm2m/objects`). */
export type DeviceObjects = ApiData<'/endpoints/{ref}/lwm2m/objects'>;
/** One object of the registry with its resources (`GET /lwm2m/objects/{objectId}`). */
export type ObjectDefinition = ApiData<'/lwm2m/objects/{objectId}'>;
export type ResourceDefinition = ObjectDefinition['resources'][number];
export type ValueRecord = DeviceObjects['lastKnown'][number];

type OperationPost = paths['/endpoints/{ref}/lwm2m/{operation}']['post'];
export type Lwm2mOperation = OperationPost['parameters']['path']['operation'];
export type OperationBody = OperationPost['requestBody']['content']['application/json'];
export type OperationResult = OperationPost['responses'][200]['content']['application/json'];

/** A value as the page knows it: where it came from last (a read, an observation, the stored last-known). */
export interface KnownValue {
  readonly value: ValueRecord['value'];
  readonly type: string;
  readonly time?: string | undefined;
  readonly source: 'last known' | 'read' | 'observe' | 'event';
}

/** `/3/0/7/1` → its parts as numbers: object, instance, resource, resource instance. */
export function pathParts(path: string): number[] {
  return path
    .split('/')
    .filter((part) => part !== '')
    .map(Number);
}

/** Values by absolute path, merged in the order they were learnt. */
export function mergeValues(known: ReadonlyMap<string, KnownValue>, records: readonly ValueRecord[], source: KnownValue['source']): ReadonlyMap<string, KnownValue> {
  if (records.length === 0) return known;
  const next = new Map(known);
  for (const record of records) next.set(record.path, { value: record.value, type: record.type, time: record.time, source });
  return next;
}
