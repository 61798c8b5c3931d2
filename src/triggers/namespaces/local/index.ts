import { codecs } from './codecs.js';
import { convert } from './convert.js';
import { date } from './date.js';
import { geospatial } from './geospatial.js';
import { hash } from './hash.js';
import { json } from './json.js';
import type { LocalNamespace } from './local.js';
import { network } from './network.js';
import { sql } from './sql.js';
import { delimitedStringToObject } from './text.js';

const string: LocalNamespace = {
  /** string.delimitedStringToObject(text, delimiter?, separator?, {intHex}?) — as convert.delimitedStringToObject. */
  delimitedStringToObject: ([value, delimiter, separator, options]) => delimitedStringToObject(value, delimiter, separator, options),
};

/** Namespaces answered inside the script worker: pure functions, no service state, no trip over IPC. */
export const LOCAL_NAMESPACES: Readonly<Record<string, LocalNamespace>> = { convert: { ...convert, ...codecs }, date, hash, json, network, geospatial, string, sql };
