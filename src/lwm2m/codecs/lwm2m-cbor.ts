/**
 * LwM2M CBOR (application/vnd.oma.lwm2m+cbor, Content-Format 11544; Core 1.2 section 7.4.4, 7.5.4 in 1.2.2):
 * nested CBOR maps keyed by path ids, from the Object ID down, e.g. {3: {0: {0: "Open Mobile Alliance"}}}.
 * A key may also be an array of ids standing for several levels at once: {[3, 0, 0]: "Open Mobile Alliance"}.
 * Leaves are the values, typed as Appendix C (Table C.-2) says for the CBOR formats: integers, floats,
 * booleans, text strings (string, corelnk, objlnk as "o:i"), byte strings (opaque), and Time as an integer
 * (the spec's /3/0/13 example) or a date/time per RFC 7049 2.4.1 (tag 0 string, tag 1 epoch seconds).
 */
import { formatPath, type Lwm2mPath, type Lwm2mRecord } from '../model.js';
import { CborMap, decodeCbor, encodeCbor, isCborArray, type CborValue } from './cbor-wire.js';
import { describeItem, typedValue, valueItem } from './cbor-values.js';
import { CodecError } from './errors.js';
import { checkUnique, isUnder, makeRecord, modelType, parseBasePath, recordPath, type CodecOptions } from './values.js';

const FORMAT = 'cbor';
const MAX_ID = 0xffff;

/**
 * Decodes LwM2M CBOR. Keys are absolute (they start with the Object ID); every value must be a resource or
 * resource instance inside `options.basePath`. An empty payload is no records.
 * @example decodeLwm2mCbor(hex('a183030009 1864'), { basePath: '/3/0/9' }) → [{ path: '/3/0/9', type: 'integer', value: 100 }]
 */
export function decodeLwm2mCbor(payload: Uint8Array, options?: CodecOptions): Lwm2mRecord[] {
  if (payload.length === 0) return [];
  const base = parseBasePath(FORMAT, options);
  const root = decodeCbor(FORMAT, payload);
  if (!(root instanceof CborMap)) throw new CodecError(FORMAT, 'the payload is a CBOR map keyed by object ids');
  const records: Lwm2mRecord[] = [];
  const walk = (map: CborMap, ids: readonly number[]) => {
    for (const [key, value] of map.entries) {
      const path = [...ids, ...keyIds(key, ids)];
      if (path.length > 4) throw new CodecError(FORMAT, `/${path.join('/')} is deeper than a resource instance`);
      if (value instanceof CborMap) {
        walk(value, path);
        continue;
      }
      const [objectId, instanceId, resourceId, resourceInstanceId] = path;
      const lwm2mPath: Lwm2mPath = { objectId, instanceId, resourceId, resourceInstanceId };
      const where = `/${path.join('/')}`;
      if (path.length < 3) throw new CodecError(FORMAT, `${where} holds a value, but only resources and resource instances do`);
      if (!isUnder(lwm2mPath, base)) throw new CodecError(FORMAT, `${where} is outside the request path ${formatPath(base)}`);
      const [type, typed] = typedValue(FORMAT, value, modelType(options?.models, lwm2mPath), where);
      records.push(makeRecord(lwm2mPath, type, typed));
    }
  };
  walk(root, []);
  return checkUnique(FORMAT, records);
}

function keyIds(key: CborValue, prefix: readonly number[]): number[] {
  const ids = isCborArray(key) ? key : [key];
  if (ids.length === 0) throw new CodecError(FORMAT, `empty id array under /${prefix.join('/')}`);
  return ids.map((id) => {
    if (typeof id !== 'bigint' || id < 0n || id > BigInt(MAX_ID)) {
      throw new CodecError(FORMAT, `map key under /${prefix.join('/')} must be an id (0..65535) or an array of ids, not ${describeItem(id)}`);
    }
    return Number(id);
  });
}

interface Node {
  value?: CborValue;
  readonly children: Map<number, Node>;
}

/**
 * Encodes records as LwM2M CBOR in the Core spec's layout: under the root, each chain of single children
 * becomes one key (a plain id for one level, an array for several: {[3, 0]: {…}}, {[1, 0, 1]: 86400});
 * below the first branching, one map level per id.
 */
export function encodeLwm2mCbor(records: readonly Lwm2mRecord[], options?: CodecOptions): Uint8Array {
  const base = parseBasePath(FORMAT, options);
  const root: Node = { children: new Map() };
  for (const record of records) {
    const path = recordPath(FORMAT, record, base);
    const ids = [path.objectId, path.instanceId, path.resourceId, path.resourceInstanceId].filter((id): id is number => id !== undefined);
    let node = root;
    for (const id of ids) {
      if (node.value !== undefined) throw duplicate(record);
      const child = node.children.get(id) ?? { children: new Map<number, Node>() };
      node.children.set(id, child);
      node = child;
    }
    if (node.value !== undefined || node.children.size > 0) throw duplicate(record);
    node.value = valueItem(FORMAT, record, false);
  }
  const entries = [...root.children].map(([id, child]) => {
    const ids = [id];
    let node = child;
    while (node.value === undefined && node.children.size === 1) {
      const [[nextId, next]] = [...node.children] as [[number, Node]];
      ids.push(nextId);
      node = next;
    }
    return [ids.length === 1 ? BigInt(id) : ids.map(BigInt), item(node)] as const;
  });
  return encodeCbor(FORMAT, new CborMap(entries));
}

function item(node: Node): CborValue {
  return node.value ?? new CborMap([...node.children].map(([id, child]) => [BigInt(id), item(child)] as const));
}

function duplicate(record: Lwm2mRecord): CodecError {
  return new CodecError(FORMAT, `${record.path} is given twice (or both as a value and as instances)`);
}
