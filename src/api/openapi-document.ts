import { isDeepStrictEqual } from 'node:util';

/** What describes the one error body in the document (src/api/schemas.ts `ErrorBody`). */
const ERROR_BODY_DESCRIPTION = 'The one error body of the API';

type Document = {
  paths?: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
  components?: { schemas?: Record<string, unknown> };
};

/**
 * The routes inline the error body in every error response: about 450 copies of the list of error codes,
 * most of the 2.8 MB the document weighed. It is given once, as `#/components/schemas/ErrorBody`, and each
 * response refers to it.
 */
export function shareErrorBody<T extends object>(document: T): T {
  const copy = structuredClone(document) as Document;
  let errorBody: unknown;
  for (const item of Object.values(copy.paths ?? {})) {
    for (const operation of Object.values(item)) {
      for (const response of Object.values(operation.responses ?? {})) {
        for (const media of Object.values(response.content ?? {})) {
          const schema = media.schema as { description?: string } | undefined;
          if (schema?.description !== ERROR_BODY_DESCRIPTION) continue;
          errorBody ??= schema;
          if (isDeepStrictEqual(schema, errorBody)) media.schema = { $ref: '#/components/schemas/ErrorBody' };
        }
      }
    }
  }
  if (errorBody !== undefined) copy.components = { ...copy.components, schemas: { ...copy.components?.schemas, ErrorBody: errorBody } };
  return copy as T;
}
