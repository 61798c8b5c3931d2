import { ScriptArgumentError } from '../namespace.js';
import { codecs } from './codecs.js';
import { convert } from './convert.js';
import { date } from './date.js';
import { hash } from './hash.js';
import { json } from './json.js';
import type { LocalNamespace } from './local.js';
import { network } from './network.js';
import { sql } from './sql.js';
import { delimitedStringToObject } from './text.js';

/** Earth's mean radius (IUGG), metres. */
const EARTH_RADIUS = 6_371_008.8;

const geospatial: LocalNamespace = {
  /** geospatial.geodist(lat1, lon1, lat2, lon2) → great-circle distance in metres (haversine). */
  geodist: (args) => {
    if (!args.slice(0, 4).every((v) => typeof v === 'number' && Number.isFinite(v))) throw new ScriptArgumentError('geodist takes four numbers: lat1, lon1, lat2, lon2');
    const [lat1, lon1, lat2, lon2] = (args as number[]).map((deg) => (deg * Math.PI) / 180) as [number, number, number, number];
    const h = Math.sin((lat2 - lat1) / 2) ** 2 + Math.cos(lat1) * Math.cos(lat2) * Math.sin((lon2 - lon1) / 2) ** 2;
    return 2 * EARTH_RADIUS * Math.asin(Math.min(1, Math.sqrt(h)));
  },
};

const string: LocalNamespace = {
  /** string.delimitedStringToObject(text, delimiter?, separator?, {intHex}?) — as convert.delimitedStringToObject. */
  delimitedStringToObject: ([value, delimiter, separator, options]) => delimitedStringToObject(value, delimiter, separator, options),
};

/** Namespaces answered inside the script worker: pure functions, no service state, no trip over IPC. */
export const LOCAL_NAMESPACES: Readonly<Record<string, LocalNamespace>> = { convert: { ...convert, ...codecs }, date, hash, json, network, geospatial, string, sql };
