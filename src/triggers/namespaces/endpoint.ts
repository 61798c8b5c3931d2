import type { Endpoint, EndpointFilter } from '../../domain/endpoints.js';
import { AppError } from '../../errors.js';
import { endpointRef, objectArg, optionalString, ScriptArgumentError, stringArg, stringField, stringListField, type Namespace, type ScriptContext } from './namespace.js';

const ref = endpointRef;

function tags(value: unknown, name: string): string[] | undefined {
  return stringListField({ [name]: value }, name);
}

function filter(value: Record<string, unknown>): EndpointFilter {
  return {
    serviceId: stringField(value, 'serviceId'),
    tags: stringListField(value, 'tags') ?? stringListField(value, 'tag'),
    keyPrefix: stringField(value, 'keyPrefix'),
    hasStatusDetail: stringListField(value, 'hasStatusDetail'),
    missingStatusDetail: stringListField(value, 'missingStatusDetail'),
  };
}

/** Stored objects answer `null` when there are none (SPEC "Errors" 4); other errors reach the script as errors. */
async function storageGet(context: ScriptContext, args: unknown[]): Promise<unknown> {
  try {
    return (await context.domain.endpoints.storageGet(context.scope, ref(context, args[0]), stringArg(args, 1, 'name'))).value;
  } catch (error) {
    if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_STORAGE_NOT_FOUND') return null;
    throw error;
  }
}

async function storageSet(context: ScriptContext, args: unknown[]): Promise<boolean> {
  await context.domain.endpoints.storagePut(context.scope, ref(context, args[0]), stringArg(args, 1, 'name'), args[2] ?? null);
  return true;
}

/**
 * `endpoint.*`: the account's endpoints. Every function acts as the trigger's account; an endpoint argument
 * is an id or `"k.<key>"`, and `null` means the event's endpoint.
 */
export const endpointNamespace: Namespace = {
  name: 'endpoint',
  functions: {
    /** endpoint.create(key, serviceId?, {tags, statusDetails, parameters}?) → the endpoint; serviceId defaults to the event's service. */
    create: async (context, args): Promise<Endpoint> => {
      const options = objectArg(args, 2, 'options');
      const serviceId = optionalString(args, 1, 'serviceId') ?? context.event.serviceId;
      if (!serviceId) throw new ScriptArgumentError('serviceId is needed: the event has no service');
      return context.domain.endpoints.create(context.scope, {
        key: stringArg(args, 0, 'key'),
        serviceId,
        tags: tags(options.tags, 'tags'),
        statusDetails: options.statusDetails as Record<string, unknown> | undefined,
        parameters: options.parameters as Record<string, unknown> | undefined,
      });
    },
    /** endpoint.update(endpoint, {tags?, addTags?, removeTags?, statusDetails?, parameters?, trace?}) merges like PATCH /endpoints/{ref}. */
    update: async (context, args) => {
      const patch = objectArg(args, 1, 'changes');
      return context.domain.endpoints.patch(context.scope, ref(context, args[0]), {
        tags: tags(patch.tags, 'tags'),
        addTags: tags(patch.addTags, 'addTags'),
        removeTags: tags(patch.removeTags, 'removeTags'),
        statusDetails: patch.statusDetails as Record<string, unknown> | undefined,
        parameters: patch.parameters as Record<string, unknown> | undefined,
        trace: typeof patch.trace === 'boolean' ? patch.trace : undefined,
      });
    },
    /** endpoint.updateTags(endpoint, addTags, removeTags?) → the endpoint. */
    updateTags: async (context, args) =>
      context.domain.endpoints.patch(context.scope, ref(context, args[0]), { addTags: tags(args[1], 'addTags') ?? [], removeTags: tags(args[2], 'removeTags') }),
    /** endpoint.attach(endpoint, serviceId) moves the endpoint to another service of the account → the endpoint. */
    attach: async (context, args) => context.domain.endpoints.patch(context.scope, ref(context, args[0]), { serviceId: stringArg(args, 1, 'serviceId') }),
    /** endpoint.delete(endpoint) → true. */
    delete: async (context, args) => {
      await context.domain.endpoints.delete(context.scope, ref(context, args[0]));
      return true;
    },
    /** endpoint.get(endpoint) → the endpoint or null. */
    get: async (context, args) => {
      try {
        return await context.domain.endpoints.get(context.scope, ref(context, args[0]));
      } catch (error) {
        if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_NOT_FOUND') return null;
        throw error;
      }
    },
    /** endpoint.searchOne({serviceId?, tags?, keyPrefix?, hasStatusDetail?, missingStatusDetail?}) → the first endpoint by key, or null. */
    searchOne: async (context, args) => {
      const page = await context.domain.endpoints.list(context.scope, filter(objectArg(args, 0, 'filter')), { limit: 1, offset: 0 });
      return page.items[0] ?? null;
    },
    /** endpoint.storageGet(endpoint, name) → the stored value, or null when there is none. */
    storageGet,
    /** endpoint.storageSet(endpoint, name, value) → true. */
    storageSet,
    /** endpoint.storeGet / storeSet: the same as storageGet / storageSet (older names). */
    storeGet: storageGet,
    storeSet: storageSet,
    /** endpoint.storageDelete(endpoint, name) → true, or false when there was nothing to delete. */
    storageDelete: async (context, args) => {
      try {
        await context.domain.endpoints.storageDelete(context.scope, ref(context, args[0]), stringArg(args, 1, 'name'));
        return true;
      } catch (error) {
        if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_STORAGE_NOT_FOUND') return false;
        throw error;
      }
    },
  },
};
