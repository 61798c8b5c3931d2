import type { ObjectModel, Operations, ResourceModel, ResourceType } from '../model.js';

/**
 * Object models as plain JSON: what the HTTP API returns, the database stores and the shipped definitions
 * are generated as. Resources are a list in id order instead of a Map; absent optional texts are left out.
 */
export interface ResourceJson {
  readonly id: number;
  readonly name: string;
  readonly operations: Operations;
  readonly multiple: boolean;
  readonly mandatory: boolean;
  readonly type: ResourceType;
  readonly rangeEnumeration?: string;
  readonly units?: string;
  readonly description?: string;
}

export interface ObjectJson {
  readonly id: number;
  readonly name: string;
  readonly version: string;
  readonly lwm2mVersion: string;
  readonly urn: string;
  readonly multiple: boolean;
  readonly mandatory: boolean;
  readonly description?: string;
  readonly resources: readonly ResourceJson[];
}

export function toObjectJson(model: ObjectModel): ObjectJson {
  const resources = [...model.resources.values()].sort((a, b) => a.id - b.id).map(toResourceJson);
  return {
    id: model.id,
    name: model.name,
    version: model.version,
    lwm2mVersion: model.lwm2mVersion,
    urn: model.urn,
    multiple: model.multiple,
    mandatory: model.mandatory,
    ...(model.description === undefined ? {} : { description: model.description }),
    resources,
  };
}

function toResourceJson(resource: ResourceModel): ResourceJson {
  return {
    id: resource.id,
    name: resource.name,
    operations: resource.operations,
    multiple: resource.multiple,
    mandatory: resource.mandatory,
    type: resource.type,
    ...(resource.rangeEnumeration === undefined ? {} : { rangeEnumeration: resource.rangeEnumeration }),
    ...(resource.units === undefined ? {} : { units: resource.units }),
    ...(resource.description === undefined ? {} : { description: resource.description }),
  };
}

export function fromObjectJson(json: ObjectJson): ObjectModel {
  return {
    id: json.id,
    name: json.name,
    version: json.version,
    lwm2mVersion: json.lwm2mVersion,
    urn: json.urn,
    multiple: json.multiple,
    mandatory: json.mandatory,
    description: json.description,
    resources: new Map(json.resources.map((resource) => [resource.id, { ...resource }])),
  };
}
