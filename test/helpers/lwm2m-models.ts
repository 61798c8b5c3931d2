/**
 * Object definitions for codec tests: the core objects the specification examples use (resource types from
 * the OMA registry: 0 Security, 1 Server, 2 Access Control, 3 Device, 4 Connectivity Monitoring, 5 Firmware
 * Update, 6 Location), the hypothetical objects 65/66/67 of Core Appendix C (object link figure), the IPSO
 * objects of the composite examples (3303, 3308, 3311), and object 33000 with one resource of each type.
 */
import type { Lwm2mRecord, ModelLookup, ObjectModel, ResourceModel, ResourceType } from '../../src/lwm2m/model.js';

type Definition = [id: number, type: ResourceType, multiple?: boolean];

const DEFINITIONS: Record<number, Definition[]> = {
  0: [[0, 'string'], [1, 'boolean'], [2, 'integer'], [3, 'opaque'], [4, 'opaque'], [5, 'opaque'], [10, 'integer'], [16, 'unsigned']],
  1: [[0, 'integer'], [1, 'integer'], [2, 'integer'], [3, 'integer'], [5, 'integer'], [6, 'boolean'], [7, 'string'], [8, 'none'], [22, 'string']],
  2: [[0, 'integer'], [1, 'integer'], [2, 'integer', true], [3, 'integer']],
  3: [
    [0, 'string'], [1, 'string'], [2, 'string'], [3, 'string'], [4, 'none'], [5, 'none'], [6, 'integer', true], [7, 'integer', true],
    [8, 'integer', true], [9, 'integer'], [10, 'integer'], [11, 'integer', true], [12, 'none'], [13, 'time'], [14, 'string'],
    [15, 'string'], [16, 'string'], [17, 'string'], [18, 'string'], [19, 'string'], [20, 'integer'], [21, 'integer'], [22, 'objlnk', true],
  ],
  4: [[0, 'integer'], [1, 'integer', true], [2, 'integer']],
  5: [[0, 'opaque'], [1, 'string'], [2, 'none'], [3, 'integer']],
  6: [[0, 'float'], [1, 'float'], [2, 'float'], [5, 'time']],
  65: [[0, 'objlnk', true], [1, 'string'], [2, 'integer']],
  66: [[0, 'string'], [1, 'string'], [2, 'objlnk']],
  67: [[0, 'string'], [1, 'string']],
  3303: [[5700, 'float'], [5701, 'string']],
  3308: [[5900, 'float']],
  3311: [[5850, 'boolean'], [5851, 'integer']],
  33000: [
    [0, 'string'], [1, 'integer'], [2, 'unsigned'], [3, 'float'], [4, 'boolean'], [5, 'opaque'], [6, 'time'], [7, 'objlnk'],
    [8, 'corelnk'], [9, 'integer', true], [10, 'none'],
  ],
};

const OBJECTS = new Map<number, ObjectModel>(
  Object.entries(DEFINITIONS).map(([id, resources]) => [
    Number(id),
    {
      id: Number(id),
      name: `object ${id}`,
      version: '1.0',
      lwm2mVersion: '1.0',
      urn: `urn:oma:lwm2m:test:${id}`,
      multiple: true,
      mandatory: false,
      resources: new Map<number, ResourceModel>(
        resources.map(([resourceId, type, multiple = false]) => [
          resourceId,
          { id: resourceId, name: `resource ${resourceId}`, operations: type === 'none' ? 'E' : 'RW', multiple, mandatory: false, type },
        ]),
      ),
    },
  ]),
);

export const testModels: ModelLookup = {
  object: (objectId) => OBJECTS.get(objectId),
  resource: (objectId, resourceId) => OBJECTS.get(objectId)?.resources.get(resourceId),
};

export const hex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text.replace(/\s+/g, ''), 'hex'));
export const toHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
export const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/**
 * The Device Object instance of the specification's example client (TS 1.0 6.4.3.1, Core 1.1 7.4.x, Core 1.2
 * Appendix F), as the records every format example of /3/0 decodes to.
 */
export const deviceRecords = [
  { path: '/3/0/0', type: 'string', value: 'Open Mobile Alliance' },
  { path: '/3/0/1', type: 'string', value: 'Lightweight M2M Client' },
  { path: '/3/0/2', type: 'string', value: '345000123' },
  { path: '/3/0/3', type: 'string', value: '1.0' },
  { path: '/3/0/6/0', type: 'integer', value: 1 },
  { path: '/3/0/6/1', type: 'integer', value: 5 },
  { path: '/3/0/7/0', type: 'integer', value: 3800 },
  { path: '/3/0/7/1', type: 'integer', value: 5000 },
  { path: '/3/0/8/0', type: 'integer', value: 125 },
  { path: '/3/0/8/1', type: 'integer', value: 900 },
  { path: '/3/0/9', type: 'integer', value: 100 },
  { path: '/3/0/10', type: 'integer', value: 15 },
  { path: '/3/0/11/0', type: 'integer', value: 0 },
  { path: '/3/0/13', type: 'time', value: new Date(1367491215000) },
  { path: '/3/0/14', type: 'string', value: '+02:00' },
  { path: '/3/0/16', type: 'string', value: 'U' },
] as const satisfies readonly Lwm2mRecord[];
