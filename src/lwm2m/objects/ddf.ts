import { XMLParser, XMLValidator } from 'fast-xml-parser';
import type { ObjectModel, Operations, ResourceModel, ResourceType } from '../model.js';

/**
 * Parser for OMA object definition files (DDF): the `LWM2M.xsd` format of the OMA LwM2M Registry
 * (LwM2M Core, Appendix D "Object template"). One file may define several objects.
 */

/** Largest DDF document accepted, in bytes (UTF-8). The HTTP body limit is the same. */
export const DDF_MAX_BYTES = 1024 * 1024;
/** Most objects one document may define. */
export const DDF_MAX_OBJECTS = 100;
/** Object and resource ids are 16-bit (LwM2M Core 7.2: `/o/i/r` ids are 0..65535). */
const MAX_ID = 65_535;

/** A DDF document that cannot be used: `what` is wrong, `where` says where (object, item, or line and column). */
export class DdfError extends Error {
  readonly what: string;
  readonly where: string;

  constructor(what: string, where: string) {
    super(`${where}: ${what}`);
    this.name = 'DdfError';
    this.what = what;
    this.where = where;
  }
}

export interface DdfOptions {
  /** Size limit in bytes (default {@link DDF_MAX_BYTES}). */
  readonly maxBytes?: number;
}

// LwM2M Core Appendix C data types, as DDF files spell them ("" = executable resources, no value).
const TYPES: Readonly<Record<string, ResourceType>> = {
  'string': 'string',
  'integer': 'integer',
  'unsigned integer': 'unsigned',
  'float': 'float',
  'boolean': 'boolean',
  'opaque': 'opaque',
  'time': 'time',
  'objlnk': 'objlnk',
  'corelnk': 'corelnk',
  '': 'none',
};

const OPERATIONS: readonly Operations[] = ['R', 'W', 'RW', 'E', ''];

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  // Versions like "1.0" and ids must stay text: they are checked and converted here.
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  // Needed for numeric character references (&#x263A;); the named HTML table it adds is fixed, nothing expands.
  htmlEntities: true,
  // Objects and items are lists even when a file holds one.
  isArray: (_name: string, jpath: unknown) => jpath === 'LWM2M.Object' || jpath === 'LWM2M.Object.Resources.Item',
});

type XmlNode = Record<string, unknown>;

/**
 * Parses a DDF document into object models, in document order.
 *
 * Rejects (with {@link DdfError}) documents over the size limit, malformed XML, any DOCTYPE or ENTITY
 * declaration (no entity can be defined, so nothing expands: "billion laughs" and external entities are
 * impossible), missing or non-numeric ids, ids outside 0..65535, duplicate object or resource ids, unknown
 * data types and operations. Names have runs of whitespace collapsed; descriptions are trimmed.
 *
 * @example
 * const [device] = parseDdf(await readFile('3.xml', 'utf8'));
 * device.resources.get(9)?.name; // 'Battery Level'
 */
export function parseDdf(xml: string, options: DdfOptions = {}): ObjectModel[] {
  const maxBytes = options.maxBytes ?? DDF_MAX_BYTES;
  const bytes = Buffer.byteLength(xml, 'utf8');
  if (bytes > maxBytes) throw new DdfError(`the document is ${bytes} bytes; at most ${maxBytes} are accepted`, 'document');
  const text = xml.replace(/^\uFEFF/, '');
  if (text.trim() === '') throw new DdfError('the document is empty', 'document');
  rejectDeclarations(text);

  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new DdfError(`not well-formed XML: ${valid.err.msg}`, `line ${valid.err.line}, column ${valid.err.col}`);
  }
  let tree: unknown;
  try {
    tree = parser.parse(text);
  } catch (error) {
    // The parser's own limits (nesting depth, reserved names such as __proto__) end up here.
    throw new DdfError(`cannot be read: ${(error as Error).message}`, 'document');
  }
  const root = isNode(tree) ? tree.LWM2M : undefined;
  if (root === undefined) throw new DdfError('the root element must be <LWM2M>', 'document');
  const objects = isNode(root) && Array.isArray(root.Object) ? (root.Object as unknown[]) : [];
  if (objects.length === 0) throw new DdfError('no <Object> element', '<LWM2M>');
  if (objects.length > DDF_MAX_OBJECTS) throw new DdfError(`${objects.length} objects; at most ${DDF_MAX_OBJECTS} per document`, '<LWM2M>');

  const models: ObjectModel[] = [];
  const seen = new Set<number>();
  objects.forEach((node, index) => {
    const model = toObject(node, index);
    if (seen.has(model.id)) throw new DdfError(`object ${model.id} is defined twice`, `Object ${model.id}`);
    seen.add(model.id);
    models.push(model);
  });
  return models;
}

/** DDF files never need a DTD; refusing every declaration is what keeps entity expansion off. */
function rejectDeclarations(xml: string): void {
  // CDATA sections and comments may mention the words; only markup counts.
  const markup = xml.replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, '').replace(/<!--[\s\S]*?-->/g, '');
  if (/<!DOCTYPE/i.test(markup) || /<!ENTITY/i.test(markup)) {
    throw new DdfError('DOCTYPE and ENTITY declarations are not allowed', 'document');
  }
}

function toObject(node: unknown, index: number): ObjectModel {
  let where = `Object #${index + 1}`;
  if (!isNode(node)) throw new DdfError('<Object> must contain elements', where);
  const idText = field(node, 'ObjectID', where);
  if (idText === undefined || idText === '') throw new DdfError('<ObjectID> is missing', where);
  const id = toId(idText, 'ObjectID', where);
  where = `Object ${id}`;
  const name = label(field(node, 'Name', where));
  if (!name) throw new DdfError('<Name> is missing', where);
  where = `Object ${id} (${name})`;

  const resources = new Map<number, ResourceModel>();
  const container = node.Resources;
  if (container !== undefined && container !== '') {
    if (!isNode(container)) throw new DdfError('<Resources> must contain <Item> elements', where);
    const items = Array.isArray(container.Item) ? (container.Item as unknown[]) : [];
    items.forEach((item, itemIndex) => {
      const resource = toResource(item, itemIndex, where);
      if (resources.has(resource.id)) throw new DdfError(`resource ${resource.id} is defined twice`, `${where}, Item ${resource.id}`);
      resources.set(resource.id, resource);
    });
  }

  return {
    id,
    name,
    version: version(field(node, 'ObjectVersion', where), 'ObjectVersion', where),
    lwm2mVersion: version(field(node, 'LWM2MVersion', where), 'LWM2MVersion', where),
    // OMNA ranges: 0..1023 are OMA objects, the rest third-party ("ext") ones.
    urn: field(node, 'ObjectURN', where) || `urn:oma:lwm2m:${id <= 1023 ? 'oma' : 'ext'}:${id}`,
    multiple: choice(field(node, 'MultipleInstances', where), 'MultipleInstances', 'Multiple', 'Single', where),
    mandatory: choice(field(node, 'Mandatory', where), 'Mandatory', 'Mandatory', 'Optional', where),
    description: prose(field(node, 'Description1', where)),
    resources,
  };
}

function toResource(node: unknown, index: number, objectWhere: string): ResourceModel {
  let where = `${objectWhere}, Item #${index + 1}`;
  if (!isNode(node)) throw new DdfError('<Item> must contain elements', where);
  const idText = node['@_ID'];
  if (typeof idText !== 'string' || idText.trim() === '') throw new DdfError('the ID attribute is missing', where);
  const id = toId(idText, 'ID', where);
  where = `${objectWhere}, Item ${id}`;
  const name = label(field(node, 'Name', where));
  if (!name) throw new DdfError('<Name> is missing', where);

  const operationsText = (field(node, 'Operations', where) ?? '').toUpperCase();
  const operations = OPERATIONS.find((op) => op === operationsText);
  if (operations === undefined) throw new DdfError(`<Operations> "${operationsText}" is not one of R, W, RW, E or empty`, where);
  const typeText = field(node, 'Type', where) ?? '';
  const type = TYPES[typeText.toLowerCase().replace(/\s+/g, ' ')];
  if (type === undefined) {
    throw new DdfError(`<Type> "${typeText}" is not one of String, Integer, Unsigned Integer, Float, Boolean, Opaque, Time, Objlnk, Corelnk or empty`, where);
  }

  return {
    id,
    name,
    operations,
    multiple: choice(field(node, 'MultipleInstances', where), 'MultipleInstances', 'Multiple', 'Single', where),
    mandatory: choice(field(node, 'Mandatory', where), 'Mandatory', 'Mandatory', 'Optional', where),
    type,
    rangeEnumeration: field(node, 'RangeEnumeration', where) || undefined,
    units: field(node, 'Units', where) || undefined,
    description: prose(field(node, 'Description', where)),
  };
}

function isNode(value: unknown): value is XmlNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a child element; undefined when absent, '' when empty. */
function field(node: XmlNode, name: string, where: string): string | undefined {
  const value = node[name];
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value.trim();
  if (Array.isArray(value)) throw new DdfError(`<${name}> appears more than once`, where);
  // An element with attributes but only text inside still counts as text.
  if (isNode(value) && Object.keys(value).every((key) => key === '#text' || key.startsWith('@_'))) {
    return typeof value['#text'] === 'string' ? value['#text'].trim() : '';
  }
  throw new DdfError(`<${name}> must hold text, not elements`, where);
}

function toId(text: string, element: string, where: string): number {
  const trimmed = text.trim();
  if (!/^\d{1,6}$/.test(trimmed)) throw new DdfError(`${element} "${trimmed}" is not a decimal number`, where);
  const id = Number(trimmed);
  if (id > MAX_ID) throw new DdfError(`${element} ${id} is out of range 0..${MAX_ID}`, where);
  return id;
}

function version(text: string | undefined, element: string, where: string): string {
  if (text === undefined || text === '') return '1.0';
  if (!/^\d{1,3}\.\d{1,3}$/.test(text)) throw new DdfError(`<${element}> "${text}" is not a version like 1.0`, where);
  return text;
}

function choice(text: string | undefined, element: string, yes: string, no: string, where: string): boolean {
  if (text === undefined || text === '') throw new DdfError(`<${element}> is missing`, where);
  const lower = text.toLowerCase();
  if (lower === yes.toLowerCase()) return true;
  if (lower === no.toLowerCase()) return false;
  throw new DdfError(`<${element}> "${text}" is not ${yes} or ${no}`, where);
}

function label(text: string | undefined): string {
  return (text ?? '').replace(/\s+/g, ' ').trim();
}

function prose(text: string | undefined): string | undefined {
  const trimmed = (text ?? '').replace(/\r\n?/g, '\n').trim();
  return trimmed === '' ? undefined : trimmed;
}
