import type { Lwm2mRecord, ModelLookup, ResourceType, ResourceValue } from './model.js';
import { parsePath } from './model.js';

/** A resource value as the API and events show it: JSON only. */
export interface JsonRecord {
  readonly path: string;
  readonly type: ResourceType;
  /** Opaque: base64; time: ISO 8601; objlnk: `"object:instance"`; integers past 2^53: decimal strings. */
  readonly value: string | number | boolean;
  /** Measurement time, ISO 8601, when the device gave one. */
  readonly time?: string | undefined;
}

export function toJsonValue(value: ResourceValue): string | number | boolean {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (typeof value === 'object') return `${value.objectId}:${value.instanceId}`;
  return value;
}

export function lwm2mRecordsToJson(records: readonly Lwm2mRecord[]): JsonRecord[] {
  return records.map((record) => ({
    path: record.path,
    type: record.type,
    value: toJsonValue(record.value),
    ...(record.time === undefined ? {} : { time: new Date(record.time * 1000).toISOString() }),
  }));
}

/** A value to write given as JSON, typed by the model (or by its JSON type when the model does not know the resource). */
export function fromJsonValue(path: string, value: unknown, models: ModelLookup): Lwm2mRecord {
  const { objectId, resourceId } = parsePath(path);
  if (resourceId === undefined || objectId === undefined) throw new RangeError(`${path}: a value needs a resource path (/object/instance/resource)`);
  const type: ResourceType =
    models.resource(objectId, resourceId)?.type ?? (typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'float') : typeof value === 'boolean' ? 'boolean' : 'string');
  return { path, type, value: typed(path, type, value) };
}

function typed(path: string, type: ResourceType, value: unknown): ResourceValue {
  const wrong = () => new RangeError(`${path}: ${JSON.stringify(value)} is not a valid ${type} value`);
  switch (type) {
    case 'integer':
    case 'unsigned': {
      if (typeof value === 'number' && Number.isInteger(value)) return value;
      if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number.isSafeInteger(Number(value)) ? Number(value) : BigInt(value);
      throw wrong();
    }
    case 'float':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      throw wrong();
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw wrong();
    case 'time':
      if (typeof value === 'number' && Number.isInteger(value)) return new Date(value * 1000);
      if (typeof value === 'string' && !Number.isNaN(Date.parse(value))) return new Date(value);
      throw wrong();
    case 'opaque':
      if (typeof value === 'string') return new Uint8Array(Buffer.from(value, 'base64'));
      // Bytes from the service itself (a firmware package pushed by FOTA), never from JSON.
      if (value instanceof Uint8Array) return value;
      throw wrong();
    case 'objlnk': {
      const match = typeof value === 'string' ? /^(\d{1,5}):(\d{1,5})$/.exec(value) : null;
      if (!match) throw wrong();
      return { objectId: Number(match[1]), instanceId: Number(match[2]) };
    }
    default:
      if (typeof value === 'string') return value;
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      throw wrong();
  }
}

/**
 * SPEC `translateIds` for `lwm2m-data`: each value's path named from the account's object definitions,
 * e.g. `{"/3/0/9": "Device/Battery Level"}` (ids the registry does not know keep their number).
 */
export function translatedNames(models: ModelLookup, values: readonly { path: string }[]): Record<string, string> {
  const names: Record<string, string> = {};
  for (const { path } of values) {
    const { objectId, resourceId } = parsePath(path);
    if (objectId === undefined) continue;
    const object = models.object(objectId)?.name ?? String(objectId);
    const resource = resourceId === undefined ? undefined : (models.resource(objectId, resourceId)?.name ?? String(resourceId));
    names[path] = resource === undefined ? object : `${object}/${resource}`;
  }
  return names;
}
