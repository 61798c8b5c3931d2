/**
 * The LwM2M data model shared by the codecs, the object registry and device management: object and
 * resource definitions (OMA LwM2M Core, Appendix D "Object template"), paths and resource values.
 */

/** Resource data types of the OMA object definitions (Core spec, Appendix C). */
export type ResourceType =
  | 'string'
  | 'integer'
  | 'unsigned'
  | 'float'
  | 'boolean'
  | 'opaque'
  | 'time'
  | 'objlnk'
  | 'corelnk'
  | 'none';

export type Operations = 'R' | 'W' | 'RW' | 'E' | '';

export interface ResourceModel {
  readonly id: number;
  readonly name: string;
  readonly operations: Operations;
  /** Multiple-instance resource. */
  readonly multiple: boolean;
  readonly mandatory: boolean;
  readonly type: ResourceType;
  readonly rangeEnumeration?: string | undefined;
  readonly units?: string | undefined;
  readonly description?: string | undefined;
}

export interface ObjectModel {
  readonly id: number;
  readonly name: string;
  /** Object version, e.g. "1.1"; "1.0" when the definition has none. */
  readonly version: string;
  /** LwM2M enabler version the object targets, e.g. "1.0". */
  readonly lwm2mVersion: string;
  readonly urn: string;
  readonly multiple: boolean;
  readonly mandatory: boolean;
  readonly description?: string | undefined;
  readonly resources: ReadonlyMap<number, ResourceModel>;
}

/** Where codecs and device management learn what a resource is. */
export interface ModelLookup {
  object(objectId: number): ObjectModel | undefined;
  resource(objectId: number, resourceId: number): ResourceModel | undefined;
}

/** `/o`, `/o/i`, `/o/i/r` or `/o/i/r/ri` (Core spec 7.2 / 6.1); `/` (root) has no object. */
export interface Lwm2mPath {
  readonly objectId?: number | undefined;
  readonly instanceId?: number | undefined;
  readonly resourceId?: number | undefined;
  readonly resourceInstanceId?: number | undefined;
}

/** An Object Link (Core spec Appendix C): object id and instance id, each 0..65535. */
export interface ObjectLink {
  readonly objectId: number;
  readonly instanceId: number;
}

/**
 * A value as codecs hand it over: strings, numbers (integer/unsigned/float; `bigint` where an integer does
 * not fit 2^53), booleans, bytes (opaque), `Date` (time), object links, or CoRE link text (corelnk is a string).
 */
export type ResourceValue = string | number | bigint | boolean | Uint8Array | Date | ObjectLink;

/**
 * One resource or resource-instance value with its absolute path. Decoded payloads of every content
 * format are lists of these (a flat view like SenML), which is what events and `lastKnown` store.
 */
export interface Lwm2mRecord {
  /** Absolute path of a single resource or resource instance, e.g. `/3/0/0` or `/3/0/7/1`. */
  readonly path: string;
  readonly type: ResourceType;
  readonly value: ResourceValue;
  /** Measurement time (SenML / LwM2M JSON timestamped values), seconds since the epoch. */
  readonly time?: number | undefined;
}

const PATH_PATTERN = /^\/(?:(\d{1,5})(?:\/(\d{1,5})(?:\/(\d{1,5})(?:\/(\d{1,5}))?)?)?)?$/;

/** Parses `/3/0/1` style paths; throws `RangeError` on anything else (ids are 0..65535; 65535 is reserved for instances). */
export function parsePath(text: string): Lwm2mPath {
  const match = PATH_PATTERN.exec(text.length > 1 && text.endsWith('/') ? text.slice(0, -1) : text);
  if (!match) throw new RangeError(`"${text}" is not an LwM2M path (/object[/instance[/resource[/instance]]])`);
  const ids = match.slice(1).map((part) => (part === undefined ? undefined : Number(part)));
  for (const id of ids) {
    if (id !== undefined && id > 65_535) throw new RangeError(`"${text}": ids are 0..65535`);
  }
  return { objectId: ids[0], instanceId: ids[1], resourceId: ids[2], resourceInstanceId: ids[3] };
}

export function formatPath(path: Lwm2mPath): string {
  const ids = [path.objectId, path.instanceId, path.resourceId, path.resourceInstanceId];
  const present = ids.slice(0, ids.indexOf(undefined) === -1 ? 4 : ids.indexOf(undefined));
  return `/${present.join('/')}`;
}

/** CoAP Content-Format numbers of the LwM2M formats (Core spec 7.1 / IANA CoAP registry). */
export const CONTENT_FORMATS = {
  text: 0,
  linkFormat: 40,
  opaque: 42,
  cbor: 60,
  senmlJson: 110,
  senmlCbor: 112,
  tlv: 11542,
  lwm2mJson: 11543,
  lwm2mCbor: 11544,
  /** Pre-registration numbers some LwM2M 1.0 clients still send. */
  oldTlv: 1542,
  oldJson: 1543,
} as const;
