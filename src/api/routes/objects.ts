import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { pageRequest } from '../../domain/pagination.js';
import { AppError } from '../../errors.js';
import { DDF_MAX_BYTES, DdfError } from '../../lwm2m/objects/ddf.js';
import { toObjectJson } from '../../lwm2m/objects/object-json.js';
import { ObjectLimitError, type AccountObject, type ObjectRegistry } from '../../lwm2m/objects/registry.js';
import { ERROR_RESPONSES, ErrorBody, List, PageQuery } from '../schemas.js';

const TAGS = ['lwm2m objects'];

const ObjectId = Type.Integer({ minimum: 0, maximum: 65_535, description: 'LwM2M object id' });
const ObjectParams = Type.Object({ objectId: ObjectId });
const Source = Type.Enum(['shipped', 'account'], { description: 'shipped with the product, or uploaded by the acting account (overrides a shipped one)' });

const Resource = Type.Object({
  id: Type.Integer({ minimum: 0, maximum: 65_535 }),
  name: Type.String(),
  operations: Type.Enum(['R', 'W', 'RW', 'E', ''], { description: 'R, W, RW, E (execute), or empty (bootstrap only)' }),
  multiple: Type.Boolean({ description: 'Multiple-instance resource' }),
  mandatory: Type.Boolean(),
  type: Type.Enum(['string', 'integer', 'unsigned', 'float', 'boolean', 'opaque', 'time', 'objlnk', 'corelnk', 'none']),
  rangeEnumeration: Type.Optional(Type.String()),
  units: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
});

const ObjectSummary = Type.Object({
  id: ObjectId,
  name: Type.String(),
  version: Type.String({ description: 'Object version, e.g. 1.1' }),
  lwm2mVersion: Type.String({ description: 'LwM2M version the object targets' }),
  urn: Type.String(),
  multiple: Type.Boolean({ description: 'Multiple-instance object' }),
  mandatory: Type.Boolean(),
  source: Source,
});

const ObjectDefinition = Type.Object({
  ...ObjectSummary.properties,
  description: Type.Optional(Type.String()),
  resources: Type.Array(Resource),
});

const DdfXml = Type.String({ minLength: 1, description: 'OMA object definition XML (LWM2M.xsd): <LWM2M> with one or more <Object>' });
const DdfUpload = Type.Object({ xml: DdfXml }, { additionalProperties: false });

function summary({ model, source }: AccountObject) {
  const { id, name, version, lwm2mVersion, urn, multiple, mandatory } = model;
  return { id, name, version, lwm2mVersion, urn, multiple, mandatory, source };
}

function definition({ model, source }: AccountObject) {
  const json = toObjectJson(model);
  return { ...json, resources: [...json.resources], source };
}

/** LwM2M object definitions: the shipped registry and the acting account's uploads. */
export const objectRoutes: FastifyPluginAsyncTypebox<{ objects: ObjectRegistry }> = async (app, { objects }) => {
  // DDF arrives as XML; the parser stays inside this plugin, other routes keep answering 415 to XML.
  app.addContentTypeParser(['application/xml', 'text/xml'], { parseAs: 'string', bodyLimit: DDF_MAX_BYTES }, (_request, body, done) => done(null, body));

  app.get(
    '/lwm2m/objects',
    {
      schema: {
        tags: TAGS,
        summary: "LwM2M objects the acting account sees: shipped ones and its own uploads, in id order",
        querystring: Type.Object(PageQuery),
        response: { 200: List(ObjectSummary), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { limit, offset } = pageRequest(request.query.limit, request.query.offset);
      const all = objects.list(request.scope.accountId);
      return { items: all.slice(offset, offset + limit).map(summary), total: all.length, limit, offset };
    },
  );

  app.get(
    '/lwm2m/objects/:objectId',
    {
      schema: {
        tags: TAGS,
        summary: 'One LwM2M object with its resources, as the acting account sees it',
        params: ObjectParams,
        response: { 200: ObjectDefinition, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const found = objects.get(request.scope.accountId, request.params.objectId);
      if (!found) throw new AppError('IOTB_LWM2M_OBJECT_NOT_FOUND');
      return definition(found);
    },
  );

  app.post(
    '/lwm2m/objects',
    {
      schema: {
        tags: TAGS,
        summary: "Upload OMA object definitions (DDF XML) for the acting account; they override shipped ones of the same id",
        body: {
          content: {
            'application/xml': { schema: DdfXml },
            'text/xml': { schema: DdfXml },
            'application/json': { schema: DdfUpload },
          },
        },
        response: { 201: Type.Object({ items: Type.Array(ObjectDefinition) }), ...ERROR_RESPONSES, 413: ErrorBody, 415: ErrorBody },
      },
    },
    async (request, reply) => {
      const body = request.body as string | { xml: string };
      const xml = typeof body === 'string' ? body : body.xml;
      try {
        const models = await objects.upload(request.scope.accountId, xml);
        return reply.status(201).send({ items: models.map((model) => definition({ model, source: 'account' })) });
      } catch (error) {
        if (error instanceof DdfError) {
          throw new AppError('IOTB_LWM2M_OBJECT_INVALID', `Invalid object definition: ${error.message}`, { what: error.what, where: error.where });
        }
        if (error instanceof ObjectLimitError) throw new AppError('IOTB_LWM2M_OBJECT_LIMIT', `The account ${error.message}`, { limit: error.limit });
        throw error;
      }
    },
  );

  app.delete(
    '/lwm2m/objects/:objectId',
    {
      schema: {
        tags: TAGS,
        summary: "Delete the acting account's uploaded definition of an object (the shipped one, if any, applies again)",
        params: ObjectParams,
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { accountId } = request.scope;
      const { objectId } = request.params;
      if (!(await objects.remove(accountId, objectId))) {
        if (objects.isShipped(objectId)) throw new AppError('IOTB_LWM2M_OBJECT_SHIPPED', `Object ${objectId} ships with the product and this account has no upload of it to delete`);
        throw new AppError('IOTB_LWM2M_OBJECT_NOT_FOUND');
      }
      return reply.status(204).send(null);
    },
  );
};
